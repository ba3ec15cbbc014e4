"""fusedtune for Python: autotuned fused GEMM + epilogue kernels through libfusedtune's C API.

    import fusedtune
    with fusedtune.Database("fusedtune.db", readonly=True) as db:
        p = fusedtune.Problem(128, 16384, 16384, "minsub", "fp32")
        plan = db.plan(p)                      # looked up, nearest shape allowed
        plan.launch(x_ptr, w_ptr, y_ptr, vecs={"bias": b_ptr}, stream=stream_handle)

PyTorch: fusedtune.torch.FusedLinear (imported on its own, so this package needs no torch).
The library is found through $FUSEDTUNE_LIBRARY, the path an install recorded, the package
folder, the build tree, then the system loader; fusedtune.library_path says which file was
loaded and fusedtune.library_source by which rule (docs/PYTHON.md).
"""
from . import errors
from .core import (BestEntry, Config, Database, Device, Epilogue, MathMode, Param, Problem, TuneProgress, Variant,
                   default_worker, devices, inspect_epilogue, math_mode, math_modes, presets, remove_database,
                   variants)
from .plan import Plan, slot_arrays
from .errors import *  # noqa: F401,F403  (the exception classes)
from ._lib import LibraryNotFound

__version__ = "0.2.1"


def __getattr__(name):
    # Loaded on first use, so that `import fusedtune` works (and errors import) without it.
    from . import _lib
    if name == "library":
        return _lib.lib()
    if name == "library_path":
        return _lib.lib().path
    if name == "library_source":
        return _lib.lib().source
    if name == "library_version":
        return _lib.lib().version
    raise AttributeError(f"module 'fusedtune' has no attribute {name!r}")
