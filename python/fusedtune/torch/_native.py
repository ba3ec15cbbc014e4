"""The C++ implementation of fusedtune::linear (csrc/fusedtune_op.cpp, _fusedtune_torchop.so), built
by CMake beside the library where python3 imports torch: loaded here, and told through ctypes what
each layer is and which plan serves each M (the Python implementation resolves a plan once and
notes it here). Without it, or with FUSEDTUNE_NO_TORCH_OP=1, the operator's CUDA implementation is the Python one
(op.py) and FusedLinear launches through Python (ctypes, or the compiled _fusedtune_ext). status()
says which and why, in one line.

    load()                   -> (ctypes library or None, why): once, at op.py's import
    layer(handle, ...)       the layer's description (shapes, dtypes, epilogue slots)
    plan(handle, ...)        the plan of one (device, M, weight dtype)
    clear(handle)            its plans dropped (a new weight, mode, or weight_changed())
    forget(handle)           the layer gone
    forget_object(ptr)       a plan or quantizer about to be destroyed
    fallback()               why this thread's last op call went to Python ("" when it did not)
"""
import ctypes
import os

# ft_dtype (include/fusedtune.h) by torch dtype name.
FT_DTYPES = {"float32": 0, "bfloat16": 1, "float16": 2, "float8_e4m3fn": 3}
NAME = "_fusedtune_torchop.so"
ENV_OFF = "FUSEDTUNE_NO_TORCH_OP"
_C = None  # the C++ implementation's library while in use
_loaded = None
WHY = "not loaded yet"


def _paths(lib_path):
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = ([os.path.dirname(os.path.abspath(lib_path))] if lib_path else []) + [here, os.path.dirname(here)]
    return [os.path.join(d, NAME) for d in dirs]


def load():
    """Loads the C++ implementation once (it registers fusedtune::linear's CUDA and CPU kernels) and
    binds it to the library the package loaded. (library, "") or (None, why)."""
    global _C, _loaded, WHY
    import torch
    from .. import _lib
    if os.environ.get(ENV_OFF, "") not in ("", "0"):
        WHY = f"{ENV_OFF} is set"
        return None, WHY
    try:
        lib = _lib.lib()
    except Exception as e:  # no library: nothing can launch anyway, and capture needs none
        WHY = f"libfusedtune not loaded ({e})"
        return None, WHY
    path = next((p for p in _paths(getattr(lib, "path", None)) if os.path.exists(p)), None)
    if path is None:
        WHY = f"no {NAME} beside {lib.path} (built by CMake where python3 imports torch)"
        return None, WHY
    try:  # the torch it was built against first: a build for another torch must not be loaded
        with open(path[:-len(".so")] + ".torch") as f:
            built = f.read().strip()
    except OSError as e:
        WHY = f"{path}: no record of the torch it was built against ({e})"
        return None, WHY
    if built != torch.__version__:
        WHY = f"{path} was built against torch {built}, this is torch {torch.__version__}: rebuild fusedtune"
        return None, WHY
    try:
        torch.ops.load_library(path)  # registers fusedtune::linear's CUDA and CPU kernels
        c = ctypes.CDLL(path)
    except (OSError, RuntimeError) as e:
        WHY = f"{path} does not load: {e}"
        return None, WHY
    c.fusedtune_torchop_abi.restype = ctypes.c_int
    if c.fusedtune_torchop_abi() != lib.version_number:
        WHY = (f"{path} was built for fusedtune {c.fusedtune_torchop_abi()}, the library loaded is "
               f"{lib.version_number} ({lib.path}): rebuild fusedtune")
        return None, WHY  # its kernels stay registered, unbound: every call goes to Python
    address = lambda fn: ctypes.cast(fn, ctypes.c_void_p).value  # noqa: E731
    c.fusedtune_torchop_layer.argtypes = [ctypes.c_int64, ctypes.c_int, ctypes.c_int64, ctypes.c_int64,
                                          ctypes.c_int64, ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                                          ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int),
                                          ctypes.POINTER(ctypes.c_char_p)]
    c.fusedtune_torchop_plan.argtypes = [ctypes.c_int64, ctypes.c_int, ctypes.c_int64, ctypes.c_int, ctypes.c_void_p,
                                         ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int64]
    c.fusedtune_torchop_clear.argtypes = [ctypes.c_int64, ctypes.c_int]
    c.fusedtune_torchop_clear.restype = None
    c.fusedtune_torchop_forget_object.argtypes = [ctypes.c_void_p]
    c.fusedtune_torchop_forget_object.restype = None
    c.fusedtune_torchop_fallback.restype = ctypes.c_char_p
    # Addresses are 64-bit: without argtypes ctypes would pass them as C ints, cut to 32 bits.
    c.fusedtune_torchop_bind.argtypes = [ctypes.c_void_p] * 3
    c.fusedtune_torchop_bind.restype = ctypes.c_int
    c.fusedtune_torchop_bound.argtypes = [ctypes.c_int]
    c.fusedtune_torchop_bound.restype = ctypes.c_void_p
    fns = [address(f) for f in (lib.ft_plan_launch_ptrs, lib.ft_plan_launch_typed, lib.ft_quantize_e4m3)]
    if c.fusedtune_torchop_bind(*fns) or [c.fusedtune_torchop_bound(i) for i in range(3)] != fns:
        WHY = f"{path}: binding the library's functions failed"  # its kernels then send every call to Python
        return None, WHY
    _C = _loaded = c
    WHY = ""
    return c, ""


def use(on):
    """Turns the C++ implementation's use by FusedLinear and FP8Linear on or off (tests, the host
    benchmark): off, their forward launches through Python as without it, and layers made then are
    not described to it (their operator calls go to the Python implementation). The status."""
    global _C
    _C = _loaded if on else None
    return status()


def active():
    return _C is not None


def status():
    """One line: "native: <path>" or "python: <why the C++ implementation is not in use>"."""
    if _C is not None:
        return f"native: {_C._name}"
    return f"python: {WHY or 'turned off (use(False))'}"


def layer(handle, *, n, k, w_rows, w_dtypes, x_dtype, y_tail, slots, typed=False):
    """Describes a layer to the C++ implementation. w_dtypes: the weight's allowed ft_dtypes;
    x_dtype: x's ft_dtype (-1: the weight's); slots: (name, kind, ft_dtype or -1) per epilogue
    slot in slot order, kind 'col', 'row', 'mat', 'scalar', or 'own' (fp8's sx, filled by the op).
    False when the layer cannot be served natively (the op's calls then go to Python)."""
    if _C is None:
        return False
    kinds = "".join({"col": "c", "row": "r", "mat": "m", "scalar": "s", "own": "o"}[kind] for _, kind, _ in slots)
    n_slots = len(slots)
    dtypes = (ctypes.c_int * max(1, n_slots))(*[d for _, _, d in slots])
    names = (ctypes.c_char_p * max(1, n_slots))(*[name.encode() for name, _, _ in slots])
    tail = (ctypes.c_int64 * max(1, len(y_tail)))(*y_tail)
    mask = 0
    for d in w_dtypes:
        mask |= 1 << d
    return _C.fusedtune_torchop_layer(handle, int(typed), n, k, w_rows, mask, x_dtype, tail, len(y_tail),
                                      kinds.encode(), dtypes, names) == 0


def plan(handle, device, m, w_dtype, plan_obj, quantizer=None, w_seen=None):
    """Notes plan_obj (a fusedtune.Plan) as the one serving handle's calls of m rows on device
    with a weight of ft_dtype w_dtype; a pre-split plan with the weight (address, version) it
    last launched with (version None: an inference tensor). False when the C++ implementation
    does not know the layer (made while it was turned off: describe it, then note again)."""
    if _C is None or plan_obj._handle is None:
        return True
    ptr, version = w_seen if w_seen is not None else (None, None)
    plan_obj._forget_hook = forget_object
    return _C.fusedtune_torchop_plan(handle, device, m, w_dtype, plan_obj._handle.value,
                                     quantizer, int(bool(plan_obj.presplit)), ptr,
                                     -1 if version is None else version) == 0


# These reach the loaded implementation even while use(False): its kernel stays registered for
# direct operator calls and compiled graphs, and must not keep a freed plan or a dead layer.
def clear(handle):
    if _loaded is not None:
        _loaded.fusedtune_torchop_clear(handle, 0)


def forget(handle):
    if _loaded is not None:
        _loaded.fusedtune_torchop_clear(handle, 1)


def forget_object(ptr):
    if _loaded is not None and ptr:
        _loaded.fusedtune_torchop_forget_object(ptr)


def fallback():
    """Why this thread's last call of fusedtune::linear's C++ implementation went to the Python one
    ("" when it did not): "layer", "weight", "x", "operand count", "operand", "device", "plan",
    "weight changed", "launch failed" (the Python implementation launches again and raises), "not bound"."""
    return _loaded.fusedtune_torchop_fallback().decode() if _loaded is not None else ""
