"""The per-call launch of a plan by pointers (ft_plan_launch_ptrs), through the compiled extension
_fusedtune_ext where it was built (python/ext/launch.c: one C call), else through ctypes; the
same for an fp8 layer's two calls (ft_quantize_e4m3, ft_plan_launch_typed).

    fn = launcher(db)          # fn(plan, x, w, y, vecs, scalars, stream) -> ft_status
    fn(plan_handle, x_ptr, w_ptr, y_ptr, vecs_addr, scalars_addr, stream)
    typed_launcher(lock)(plan_handle, typed_args_addr, stream) -> ft_status
    quantizer_call(lock)(q, src, dtype, rows, cols, scaling, dst, scales, stream) -> ft_status

Every argument is an int address (vecs: a void *[] in the epilogue's slot order, scalars: a
float[]; 0 for NULL). The extension is looked for beside the loaded library (a build tree, an
install's lib folder), then in this package's folder; FUSEDTUNE_NO_EXT=1 in the environment keeps
to ctypes. KIND says which path is in use ("extension" or "ctypes"); use() switches (tests).
"""
import importlib.machinery
import importlib.util
import os

from . import _lib

EXT_NAME = "_fusedtune_ext"
ENV_NO_EXT = "FUSEDTUNE_NO_EXT"

KIND = None
WHY = ""  # why the extension is not in use ("" when it is)
_ext = None


def _ext_paths():
    dirs = [os.path.dirname(os.path.abspath(_lib.lib().path)), os.path.dirname(os.path.abspath(__file__))]
    for d in dirs:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            yield os.path.join(d, EXT_NAME + suffix)


def _load_ext():
    """The extension module, bound to the loaded library's ft_plan_launch_ptrs; or None and why."""
    if os.environ.get(ENV_NO_EXT, "") not in ("", "0"):
        return None, f"{ENV_NO_EXT} is set"
    for path in _ext_paths():
        if not os.path.exists(path):
            continue
        try:
            spec = importlib.util.spec_from_file_location(EXT_NAME, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            address = lambda fn: _lib.ctypes.cast(fn, _lib.ctypes.c_void_p).value  # noqa: E731
            lib = _lib.lib()
            mod.bind(address(lib.ft_plan_launch_ptrs))
            mod.bind_fp8(address(lib.ft_plan_launch_typed), address(lib.ft_quantize_e4m3))
            return mod, ""
        except (ImportError, OSError, AttributeError, ValueError) as e:
            return None, f"{path}: {e}"
    return None, f"no {EXT_NAME} beside {_lib.lib().path} nor in the package (built where Python's headers are)"


def use(kind=None):
    """Selects the launch path: "extension", "ctypes", or None (the extension when it loads).
    Returns KIND; ImportError when the extension was asked for and does not load."""
    global KIND, WHY, _ext
    if kind not in (None, "extension", "ctypes"):
        raise ValueError(f"launch path {kind!r}: 'extension', 'ctypes' or None")
    if kind == "ctypes":
        KIND, WHY, _ext = "ctypes", "asked for", None
        return KIND
    mod, why = _load_ext()
    if mod is None and kind == "extension":
        raise ImportError(f"fusedtune: the compiled launch path does not load: {why}")
    _ext, WHY = mod, why
    KIND = "extension" if mod is not None else "ctypes"
    return KIND


def launcher(lock):
    """fn(plan, x, w, y, vecs, scalars, stream) -> ft_status. The extension's call holds the GIL,
    so Python threads never launch at once; the ctypes call releases it, so it takes lock (the
    plan's database lock) instead."""
    if KIND is None:
        use()
    if _ext is not None:
        return _ext.launch
    raw = _lib.lib().ft_plan_launch_ptrs

    def launch(plan, x, w, y, vecs, scalars, stream):
        with lock:
            return raw(plan, x, w, y, vecs, scalars, stream)
    return launch


def typed_launcher(lock):
    """fn(plan, args, stream) -> ft_status of ft_plan_launch_typed, args an ft_typed_args's address;
    as launcher(): the extension's call holds the GIL, the ctypes one takes lock."""
    if KIND is None:
        use()
    if _ext is not None:
        return _ext.launch_typed
    raw, ptr = _lib.lib().ft_plan_launch_typed, _lib.ctypes.POINTER(_lib.ft_typed_args)

    def launch(plan, args, stream):
        with lock:
            return raw(plan, _lib.ctypes.cast(args, ptr), stream)
    return launch


def quantizer_call(lock):
    """fn(q, src, dtype, rows, cols, scaling, dst, scales, stream) -> ft_status of
    ft_quantize_e4m3 (addresses and ints); as launcher()."""
    if KIND is None:
        use()
    if _ext is not None:
        return _ext.quantize
    raw = _lib.lib().ft_quantize_e4m3

    def quantize(*args):
        with lock:
            return raw(*args)
    return quantize
