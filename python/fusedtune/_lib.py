"""Finding and loading libfusedtune, and the ctypes mirror of its public headers.

Every struct here mirrors one in include/fusedtune.h or include/fusedtune_tool.h field for
field; tests/python/cpu/test_fusedtune.py checks sizes and offsets against the C compiler's
(tests/python/cpu/layout_dump.c). Every function the package calls has its signature declared in
_SIGNATURES, so no call goes through ctypes' int-only defaults.
"""
import ctypes
import os

ENV_LIBRARY = "FUSEDTUNE_LIBRARY"
LIBRARY_NAME = "libfusedtune.so.0"

# ---- constants (checked against the header by the layout test) ----
FUSEDTUNE_VERSION_NUMBER = 2001
FT_OPEN_READONLY = 0x1
FT_OPEN_CREATE = 0x2
FT_LOOKUP_NEAREST = 0x1
FT_LOOKUP_EXACT = 0x2
FT_LOOKUP_MODE_ONLY = 0x4
FT_MATCH_NEAREST, FT_MATCH_EXACT, FT_MATCH_BUCKET = 0, 1, 2
FT_VARIANTS_COMPILE = 0x1
FT_VARIANTS_FULL = 0x2
FT_CONFIG_JSON_MAX = 512
FT_NAME_MAX = 128
FT_EPILOGUE_MAX_PARAMS = 8
FT_DTYPE_F32, FT_DTYPE_BF16, FT_DTYPE_F16, FT_DTYPE_E4M3 = 0, 1, 2, 3
FT_PARAM_TYPE_SCALAR, FT_PARAM_TYPE_COLVEC, FT_PARAM_TYPE_ROWVEC, FT_PARAM_TYPE_MATRIX = 0, 1, 2, 3

c_enum = ctypes.c_int  # C enums with small non-negative values are int-sized (the layout test checks)


class ft_problem(ctypes.Structure):
    _fields_ = [("m", ctypes.c_int64), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
                ("epilogue", ctypes.c_char_p), ("math", c_enum)]


class ft_config(ctypes.Structure):
    _fields_ = [("strategy", ctypes.c_char * 32), ("name", ctypes.c_char * FT_NAME_MAX),
                ("config", ctypes.c_char * FT_CONFIG_JSON_MAX), ("source_hash", ctypes.c_char * 17),
                ("median_ms", ctypes.c_double), ("eager_ms", ctypes.c_double),
                ("tuned_m", ctypes.c_int64), ("tuned_n", ctypes.c_int64), ("tuned_k", ctypes.c_int64),
                ("exact", ctypes.c_int), ("math", c_enum), ("rel_err", ctypes.c_double),
                ("max_abs_err", ctypes.c_double)]


class ft_vec_arg(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p)]


class ft_scalar_arg(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_float)]


class ft_args(ctypes.Structure):
    _fields_ = [("x", ctypes.c_void_p), ("w", ctypes.c_void_p), ("y", ctypes.c_void_p),
                ("vecs", ctypes.POINTER(ft_vec_arg)), ("n_vecs", ctypes.c_int),
                ("scalars", ctypes.POINTER(ft_scalar_arg)), ("n_scalars", ctypes.c_int),
                ("dtype", c_enum)]


class ft_tensor_arg(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("dtype", c_enum)]


class ft_typed_args(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("x", ft_tensor_arg), ("w", ft_tensor_arg), ("y", ft_tensor_arg),
                ("vecs", ctypes.POINTER(ft_tensor_arg)), ("n_vecs", ctypes.c_int),
                ("scalars", ctypes.POINTER(ft_scalar_arg)), ("n_scalars", ctypes.c_int),
                ("y_scales", ctypes.c_void_p), ("y_work", ctypes.c_void_p), ("quantizer", ctypes.c_void_p)]


FT_SCALE_TENSOR, FT_SCALE_ROW = 0, 1


class ft_tune_progress(ctypes.Structure):
    _fields_ = [("phase", ctypes.c_char_p), ("message", ctypes.c_char_p), ("done", ctypes.c_int),
                ("total", ctypes.c_int), ("best_ms", ctypes.c_double), ("elapsed_s", ctypes.c_double),
                ("eta_s", ctypes.c_double), ("eager_ms", ctypes.c_double)]


ft_tune_progress_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ft_tune_progress))


class ft_tune_options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("strategy", ctypes.c_char_p), ("budget_s", ctypes.c_double),
                ("repeats", ctypes.c_int), ("retune", ctypes.c_int), ("flush_l2", ctypes.c_int),
                ("quiet", ctypes.c_int), ("seed", ctypes.c_uint64), ("progress", ft_tune_progress_fn),
                ("progress_user", ctypes.c_void_p), ("stop", ctypes.POINTER(ctypes.c_int)),
                ("worker_exe", ctypes.c_char_p), ("max_candidates", ctypes.c_int), ("mode_only", ctypes.c_int)]


def tune_options_init():
    """FT_TUNE_OPTIONS_INIT."""
    o = ft_tune_options()
    o.struct_size = ctypes.sizeof(ft_tune_options)
    o.strategy = b"fast"
    o.repeats = 30
    o.quiet = 1
    return o


class ft_import_counts(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in ("devices", "problems", "runs", "results", "cubins", "devices_in",
                                              "problems_in", "runs_in", "results_in", "cubins_in")]


class ft_best_entry(ctypes.Structure):
    _fields_ = [("device_name", ctypes.c_char * 256), ("math", ctypes.c_char * 16),
                ("epilogue", ctypes.c_char * 4096), ("config", ft_config)]


ft_best_entry_fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ft_best_entry))


class ft_device_desc(ctypes.Structure):
    _fields_ = [("ordinal", ctypes.c_int), ("name", ctypes.c_char * 256), ("fingerprint", ctypes.c_char * 17),
                ("arch", ctypes.c_char * 16), ("sm_count", ctypes.c_int), ("mem_bytes", ctypes.c_int64),
                ("driver_version", ctypes.c_int), ("runtime_version", ctypes.c_int),
                ("nvrtc_version", ctypes.c_int), ("cublas_version", ctypes.c_int)]


class ft_variant_info(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * FT_NAME_MAX), ("config", ctypes.c_char * FT_CONFIG_JSON_MAX),
                ("strategy", c_enum), ("source_hash", ctypes.c_char * 17), ("compile_status", c_enum),
                ("compile_log", ctypes.c_char * 512), ("regs", ctypes.c_int), ("spill_bytes", ctypes.c_int)]


class ft_variant_list(ctypes.Structure):
    _fields_ = [("arch", ctypes.c_char * 16), ("epilogue", ctypes.c_char * 4096), ("count", ctypes.c_int),
                ("items", ctypes.POINTER(ft_variant_info)), ("compiled", ctypes.c_int),
                ("n_compiled_ok", ctypes.c_int), ("compile_s", ctypes.c_double)]


class ft_epilogue_param(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 32), ("type", c_enum), ("has_default", ctypes.c_int),
                ("default_value", ctypes.c_double)]


class ft_epilogue_info(ctypes.Structure):
    _fields_ = [("canonical", ctypes.c_char_p), ("hash", ctypes.c_char * 17), ("cuda", ctypes.c_char_p),
                ("n_params", ctypes.c_int), ("params", ft_epilogue_param * FT_EPILOGUE_MAX_PARAMS),
                ("uses_x2", ctypes.c_int)]


class ft_problem_item(ctypes.Structure):
    _fields_ = [("problem", ft_problem), ("line", ctypes.c_int), ("entry", ctypes.c_int),
                ("duplicate_of", ctypes.c_int)]


class ft_problem_list(ctypes.Structure):
    _fields_ = [("count", ctypes.c_int), ("items", ctypes.POINTER(ft_problem_item)), ("n_unique", ctypes.c_int),
                ("n_entries", ctypes.c_int), ("csv", ctypes.c_int)]


# The structs the layout test compares with the C compiler's view, by their C names.
STRUCTS = (ft_problem, ft_config, ft_vec_arg, ft_scalar_arg, ft_args, ft_tensor_arg, ft_typed_args, ft_tune_progress, ft_tune_options,
           ft_import_counts, ft_best_entry, ft_device_desc, ft_variant_info, ft_variant_list,
           ft_epilogue_param, ft_epilogue_info, ft_problem_item, ft_problem_list)

_P = ctypes.POINTER
_vp, _cp, _int, _uint, _st = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, c_enum
_msg = [ctypes.c_char_p, ctypes.c_size_t]  # the (msg, msg_size) pair of functions that take no ctx

# name: (restype, argtypes). Handles (ft_ctx *, ft_plan *) travel as void pointers.
_SIGNATURES = {
    "ft_version_number": (_int, []),
    "ft_version_string": (_cp, []),
    "ft_status_string": (_cp, [_st]),
    "ft_math_name": (_cp, [_st]),
    "ft_math_from_name": (_int, [_cp, _P(_st)]),
    "ft_math_dtype": (_st, [_st]),
    "ft_open": (_st, [_cp, _uint, _P(_vp)]),
    "ft_close": (None, [_vp]),
    "ft_errmsg": (_cp, [_vp]),
    "ft_check_problem": (_st, [_P(ft_problem)] + _msg),
    "ft_output_shape": (_st, [_P(ft_problem), _P(ctypes.c_int), _P(ctypes.c_int64)] + _msg),
    "ft_gated_interleave": (_st, [_vp, _vp, _vp, ctypes.c_int64, ctypes.c_int64, ctypes.c_size_t, _vp] + _msg),
    "ft_lookup": (_st, [_vp, _P(ft_problem), _uint, _P(ft_config)]),
    "ft_lookup_within": (_st, [_vp, _P(ft_problem), ctypes.c_double, _P(ft_config)]),
    "ft_lookup_entry_within": (_st, [_vp, _cp, _P(ft_problem), ctypes.c_double, _P(ft_best_entry)]),
    "ft_plan_create": (_st, [_vp, _P(ft_problem), _P(ft_config), _P(_vp)]),
    "ft_plan_launch": (_st, [_vp, _P(ft_args), _vp]),
    "ft_plan_launch_typed": (_st, [_vp, _P(ft_typed_args), _vp]),
    "ft_quantizer_create": (_st, [_vp, _P(_vp)]),
    "ft_quantize_e4m3": (_st, [_vp, _vp, _st, ctypes.c_int64, ctypes.c_int64, _st, _vp, _vp, _vp]),
    "ft_quantizer_destroy": (None, [_vp]),
    "ft_plan_launch_ptrs": (_st, [_vp, _vp, _vp, _vp, _vp, _vp, _vp]),  # vecs, scalars: array addresses
    "ft_plan_destroy": (None, [_vp]),
    "ft_plan_weight_changed": (None, [_vp]),
    "ft_tune": (_st, [_vp, _P(ft_problem), _P(ft_tune_options), _P(ft_config)]),
    "ft_strategy_name": (_cp, [_st]),
    "ft_schema_version": (_int, []),
    "ft_import_file": (_st, [_vp, _cp, _P(ft_import_counts)]),
    "ft_export_file": (_st, [_vp, _cp, _uint]),
    "ft_problem_list_load": (_st, [_cp, _P(_P(ft_problem_list))] + _msg),
    "ft_problem_list_free": (None, [_P(ft_problem_list)]),
    "ft_remove_database_v2": (_st, [_cp] + _msg),
    "ft_each_best": (_st, [_vp, ft_best_entry_fn, _vp]),
    "ft_lookup_entry": (_st, [_vp, _cp, _P(ft_problem), _uint, _P(ft_best_entry)]),
    "ft_device_count": (_st, [_P(_int)] + _msg),
    "ft_device_describe": (_st, [_int, _P(ft_device_desc)] + _msg),
    "ft_variants": (_st, [_P(ft_problem), _cp, _uint, _P(_P(ft_variant_list))] + _msg),
    "ft_variant_list_free": (None, [_P(ft_variant_list)]),
    "ft_epilogue_inspect": (_st, [_cp, _P(_P(ft_epilogue_info))] + _msg),
    "ft_epilogue_info_free": (None, [_P(ft_epilogue_info)]),
    "ft_epilogue_preset": (_int, [_int, _P(_cp), _P(_cp)]),
    "ft_fp8_epilogue": (_st, [_cp, _cp, ctypes.c_size_t]),
}


def candidates(env=None, package_dir=None):
    """The places to load the library from, in order, as (source, path) pairs.

    1. $FUSEDTUNE_LIBRARY (a file, or a folder holding libfusedtune.so.0), and nothing else when set;
    2. installed: the path `cmake --install` recorded in _library_path.txt, relative to this package;
    3. libfusedtune.so.0 inside the package folder (a package that carries its library);
    4. the build tree: <repo>/build/ when the package is run from a checkout's python/fusedtune;
    5. the system loader's search (LD_LIBRARY_PATH, ld.so.cache) for libfusedtune.so.0.
    """
    env = os.environ if env is None else env
    package_dir = os.path.dirname(os.path.abspath(__file__)) if package_dir is None else package_dir
    explicit = env.get(ENV_LIBRARY)
    if explicit:
        path = os.path.join(explicit, LIBRARY_NAME) if os.path.isdir(explicit) else explicit
        if os.sep in path:
            path = os.path.abspath(path)
        return [(ENV_LIBRARY, path)]
    out = []
    rel = _installed_relpath(package_dir)
    if rel:
        out.append(("installed", os.path.normpath(os.path.join(package_dir, rel))))
    out.append(("package folder", os.path.join(package_dir, LIBRARY_NAME)))
    repo = os.path.normpath(os.path.join(package_dir, "..", ".."))
    if os.path.isfile(os.path.join(repo, "CMakeLists.txt")):  # run from a source checkout
        out.append(("build tree", os.path.join(repo, "build", LIBRARY_NAME)))
    out.append(("system loader", LIBRARY_NAME))
    return out


INSTALL_RECORD = "_library_path.txt"


def _installed_relpath(package_dir):
    """The library path `cmake --install` recorded beside the package (relative to it), or None."""
    try:
        with open(os.path.join(package_dir, INSTALL_RECORD), encoding="utf-8") as f:
            rel = f.read().strip()
    except OSError:
        return None
    return rel or None


class LibraryNotFound(ImportError):
    """libfusedtune could not be loaded from any place; the message lists each place and why."""


class Library:
    """The loaded library: .path (what was loaded), .source (which rule found it), .version."""

    def __init__(self, cdll, path, source):
        self.cdll, self.path, self.source = cdll, path, source
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(cdll, name)
            except AttributeError as e:
                raise LibraryNotFound(f"{path} (found by {source}) has no function {name}: "
                                      f"a libfusedtune older than this package?") from e
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name, fn)
        self.version = self.ft_version_string().decode()
        self.version_number = self.ft_version_number()

    def describe(self):
        return f"{self.path} (found by {self.source}, libfusedtune {self.version})"


def load(env=None, package_dir=None):
    """Loads the first candidate that loads; LibraryNotFound names every place tried."""
    tried = []
    for source, path in candidates(env, package_dir):
        if source not in (ENV_LIBRARY, "system loader") and not os.path.exists(path):
            tried.append(f"  {source}: {path}: no such file")
            continue
        try:
            cdll = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"  {source}: {path}: {e}")
            continue
        if source == "system loader":
            path = _loaded_path(cdll) or path
        return Library(cdll, path, source)
    raise LibraryNotFound("fusedtune: cannot load libfusedtune; tried, in order:\n" + "\n".join(tried) +
                          f"\nSet {ENV_LIBRARY} to the library file (e.g. build/libfusedtune.so.0), "
                          "or install with cmake --install (docs/PYTHON.md).")


def _loaded_path(cdll):
    """The file the dynamic loader chose for cdll (from /proc/self/maps), or None."""
    try:
        addr = ctypes.cast(cdll.ft_version_number, ctypes.c_void_p).value
        with open("/proc/self/maps", encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                lo, hi = (int(v, 16) for v in parts[0].split("-"))
                if lo <= addr < hi and len(parts) >= 6:
                    return parts[5]
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _mapped(prefix):
    """The path of a loaded shared object whose file name starts with prefix, or None."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and os.path.basename(parts[5]).startswith(prefix):
                    return parts[5]
    except OSError:
        pass
    return None


def import_torch(module):
    """The torch module, for module ("fusedtune.fp8"); without PyTorch an ImportError that says
    what needs it and what works without it, not only "No module named 'torch'"."""
    try:
        import torch
    except ImportError as e:
        raise ImportError(f"{module} needs PyTorch, which does not import here ({e}): install it (pip install torch). "
                          f"The rest of fusedtune works without it: fusedtune.Database, Problem, lookups, tunes, "
                          f"plans launched by device pointer, and the fusedtune command line") from e
    return torch


_cudart = None


def cudart():
    """The CUDA runtime libfusedtune was linked with (already loaded beside it), with
    cudaGetDevice / cudaSetDevice declared; None when it cannot be found."""
    global _cudart
    if _cudart is None:
        lib()
        path = _mapped("libcudart.so")
        try:
            rt = ctypes.CDLL(path) if path else None
        except OSError:
            rt = None
        if rt is not None:
            rt.cudaGetDevice.restype, rt.cudaGetDevice.argtypes = ctypes.c_int, [ctypes.POINTER(ctypes.c_int)]
            rt.cudaSetDevice.restype, rt.cudaSetDevice.argtypes = ctypes.c_int, [ctypes.c_int]
        _cudart = rt or False
    return _cudart or None


_lib = None


def lib():
    """The library, loaded on first use."""
    global _lib
    if _lib is None:
        _lib = load()
    return _lib
