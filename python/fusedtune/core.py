"""The C API as Python objects: problems, math modes, databases, lookups and tunes (plans: plan.py).

A thin layer: every function calls the library and turns a failed ft_status into the exception
of errors.STATUSES with ft_errmsg's text. Tensors do not appear here (plans take device
pointers as ints); fusedtune.torch builds on this for PyTorch.
"""
import ctypes
import os
import shlex
import threading
import weakref
from dataclasses import dataclass, field

from . import _lib
from ._lib import lib
from .errors import (ArgumentTypeError, FusedtuneError, InputOutputError, InvalidArgumentError, Interrupted,
                     NotTunedError, ParseError, UnsupportedError, error_for)


def _s(b):
    """A C string (bytes or None) as str."""
    return "" if b is None else b.decode("utf-8", "replace")


def _typed(what, value, cls, need):
    """value when it is a cls; else ArgumentTypeError (a TypeError) naming the argument and the
    type it needs, before anything reaches the library."""
    if not isinstance(value, cls) or (cls is int and isinstance(value, bool)):
        raise ArgumentTypeError(f"{what} must be {need}, not {type(value).__name__}")
    return value


def _cstr(what, text):
    """text (a str) as a C string. C reads up to the first NUL, so a str holding one would reach
    the library cut short: refused with ValueError, as open() refuses such a path."""
    _typed(what, text, str, "a str")
    b = text.encode()
    if b"\0" in b:
        raise InvalidArgumentError(f"{what} {text!r} contains a NUL character (at {text.index(chr(0))})")
    return b


def _cpath(path):
    """A file path as a C string; ValueError for an embedded NUL, as open() gives."""
    b = os.fsencode(path)
    if b"\0" in b:
        raise InvalidArgumentError(f"path {os.fsdecode(b)!r} contains a NUL character")
    return b


def _cint(what, v, bits=32):
    """v as a signed C integer of bits bits: ctypes would wrap a larger one silently, so that
    2**64 + 128 became 128."""
    _typed(what, v, int, "an int")
    if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
        raise InvalidArgumentError(f"{what} {v} is out of range (a {bits}-bit signed integer)")
    return v


def _raise(status, message, cls=None):
    err = error_for(status, message, cls)
    err.library = lib().path
    raise err


# ---- math modes ----

# The element type of each ft_dtype, by torch's names, and the mode a tensor of that type gets
# when none is asked for. Math modes themselves come from the library (ft_math_name), so a mode
# added to FT_MATH_MAP (3xtf32, on fp32 tensors) is selectable here with no change.
DTYPE_NAMES = {_lib.FT_DTYPE_F32: "float32", _lib.FT_DTYPE_BF16: "bfloat16", _lib.FT_DTYPE_F16: "float16",
               _lib.FT_DTYPE_E4M3: "float8_e4m3fn"}
DTYPE_SIZES = {_lib.FT_DTYPE_F32: 4, _lib.FT_DTYPE_BF16: 2, _lib.FT_DTYPE_F16: 2, _lib.FT_DTYPE_E4M3: 1}
DEFAULT_MODE = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


@dataclass(frozen=True)
class MathMode:
    name: str      # "fp32", as the CLI's --math and the database spell it
    value: int     # its ft_math
    ft_dtype: int  # FT_DTYPE_* of the tensors it computes on
    dtype: str     # that element type by torch's name: "float32", "bfloat16", "float16"


_modes = None


def math_modes():
    """Every math mode the loaded library has, in FT_MATH_MAP order: {name: MathMode}."""
    global _modes
    if _modes is None:
        L, found = lib(), {}
        for value in range(64):
            name = _s(L.ft_math_name(value))
            if name == "?":
                break
            dt = L.ft_math_dtype(value)
            found[name] = MathMode(name, value, dt, DTYPE_NAMES.get(dt, f"ft_dtype {dt}"))
        _modes = found
    return _modes


def math_mode(name):
    """The MathMode called name; UnsupportedError listing the modes otherwise."""
    modes = math_modes()
    if isinstance(name, MathMode):
        return name
    if name not in modes:
        raise UnsupportedError(f"unknown math mode {name!r} (this libfusedtune has {', '.join(modes)})")
    return modes[name]


# ---- epilogues ----

@dataclass(frozen=True)
class Param:
    name: str
    kind: str               # "scalar", "col" (length n, per column) or "row" (length m, per row)
    default: float = None   # scalars with a default; None otherwise


@dataclass(frozen=True)
class Epilogue:
    text: str       # as given
    canonical: str  # one text for every spelling (the database key)
    hash: str
    cuda: str       # the generated CUDA float expression
    params: tuple   # Param in kernel slot order (bias included, sorted by name)
    uses_x2: bool = False  # reads x2, a gated pair's second product (its weight: the interleaved [2N, K])

    def param(self, name):
        return next((p for p in self.params if p.name == name), None)


_KINDS = {_lib.FT_PARAM_TYPE_SCALAR: "scalar", _lib.FT_PARAM_TYPE_COLVEC: "col", _lib.FT_PARAM_TYPE_ROWVEC: "row",
          _lib.FT_PARAM_TYPE_MATRIX: "mat"}


def _msgbuf():
    return ctypes.create_string_buffer(1024)


def inspect_epilogue(text):
    """Parses an expression or preset: an Epilogue, or ParseError with "epilogue: col C: what"."""
    L, out, msg = lib(), ctypes.POINTER(_lib.ft_epilogue_info)(), _msgbuf()
    st = L.ft_epilogue_inspect(_cstr("epilogue", text), ctypes.byref(out), msg, len(msg))
    if st != 0:
        _raise(st, _s(msg.value))
    try:
        info = out.contents
        params = tuple(Param(_s(p.name), _KINDS[p.type], p.default_value if p.has_default else None)
                       for p in info.params[:info.n_params])
        return Epilogue(text, _s(info.canonical), _s(info.hash), _s(info.cuda), params, bool(info.uses_x2))
    finally:
        L.ft_epilogue_info_free(out)


def presets():
    """{preset name: expression}, as docs/EPILOGUE.md lists them."""
    L, out = lib(), {}
    name, text = ctypes.c_char_p(), ctypes.c_char_p()
    for i in range(L.ft_epilogue_preset(0, None, None)):
        L.ft_epilogue_preset(i, ctypes.byref(name), ctypes.byref(text))
        out[_s(name.value)] = _s(text.value)
    return out


# ---- problems and configurations ----

@dataclass(frozen=True)
class Problem:
    """y[m, n] = E(x[m, k] . W[n, k]^T) in a math mode: the database key (with the device)."""
    m: int
    n: int
    k: int
    epilogue: str = "none"
    math: str = "fp32"

    def _c(self):
        mode = math_mode(self.math)
        dims = [_cint(f"problem {dim}", getattr(self, dim), 64) for dim in ("m", "n", "k")]
        p = _lib.ft_problem(*dims, _cstr("problem epilogue", self.epilogue), mode.value)
        return p

    @property
    def shape(self):
        return f"{self.m}x{self.n}x{self.k}"

    def check(self):
        """ft_check_problem: raises (InvalidArgumentError, ParseError, ...) with the reason."""
        msg = _msgbuf()
        st = lib().ft_check_problem(ctypes.byref(self._c()), msg, len(msg))
        if st != 0:
            _raise(st, _s(msg.value))

    @property
    def output_shape(self):
        """ft_output_shape: y's shape before anything runs: (m, n) for an elementwise epilogue and
        softmax-like reductions, (m,) for a row reduction (logsumexp, rowsum, ...), (m, n // w)
        after a pool of window w. Raises as check() does."""
        msg, ndim, dims = _msgbuf(), ctypes.c_int(0), (ctypes.c_int64 * 2)()
        st = lib().ft_output_shape(ctypes.byref(self._c()), ctypes.byref(ndim), dims, msg, len(msg))
        if st != 0:
            _raise(st, _s(msg.value))
        return (dims[0],) if ndim.value == 1 else (dims[0], dims[1])

    def tune_command(self, db=None):
        """The `fusedtune tune` command line that tunes this problem (into db when given)."""
        words = ["fusedtune"] + (["--db", os.fspath(db)] if db else [])
        words += ["tune", "--shape", self.shape, "--epilogue", self.epilogue]
        name = math_mode(self.math).name
        if name != "fp32":  # fp32 without --math: fp32 accuracy (3xtf32 and fp32), as lookups serve it
            words += ["--math", name]
        return " ".join(shlex.quote(w) for w in words)


def _cproblem(problem):
    """problem (a Problem) as an ft_problem; ArgumentTypeError for anything else."""
    return _typed("problem", problem, Problem, "a fusedtune.Problem")._c()


def _lookup_flags(nearest, buckets, mode_only=False):
    """ft_lookup's flags: FT_LOOKUP_NEAREST, or FT_LOOKUP_EXACT (no M bucket); not both; and
    FT_LOOKUP_MODE_ONLY (fp32: FFMA and SGEMM alone, not fp32 accuracy)."""
    if nearest and not buckets:
        raise InvalidArgumentError("nearest=True needs buckets=True (the nearest shape comes after the M bucket)")
    return ((_lib.FT_LOOKUP_NEAREST if nearest else 0) | (0 if buckets else _lib.FT_LOOKUP_EXACT) |
            (_lib.FT_LOOKUP_MODE_ONLY if mode_only else 0))


@dataclass(frozen=True)
class Config:
    """A tuned configuration as stored (ft_config). exact: tuned for the problem's own shape;
    bucket: an M bucket served it (tuned at tuned_m, the smallest tuned M >= the problem's M with
    its N, K, epilogue and mode; beyond the largest, the largest); neither: the nearest shape."""
    strategy: str
    name: str
    config: str          # the variant's JSON
    source_hash: str
    median_ms: float
    eager_ms: float      # eager-style baseline at the clock median_ms was timed at (eager_ms / median_ms is the speed-up); 0 when unknown
    tuned_shape: tuple   # (m, n, k) it was tuned at
    exact: bool
    math: str = "fp32"   # the mode it computes in (lookup_within may pick another than asked)
    rel_err: float = 0.0       # measured when tuned: relative L2 error against float64
    max_abs_err: float = 0.0
    bucket: bool = False       # served by an M bucket (ft_config.exact == FT_MATCH_BUCKET)
    raw: object = field(default=None, repr=False, compare=False)  # the ft_config, for plans

    @classmethod
    def _from_c(cls, c):
        raw = _lib.ft_config()
        ctypes.memmove(ctypes.byref(raw), ctypes.byref(c), ctypes.sizeof(raw))
        return cls(_s(c.strategy), _s(c.name), _s(c.config), _s(c.source_hash), c.median_ms, c.eager_ms,
                   (c.tuned_m, c.tuned_n, c.tuned_k), c.exact == _lib.FT_MATCH_EXACT, _s(lib().ft_math_name(c.math)),
                   c.rel_err, c.max_abs_err, c.exact == _lib.FT_MATCH_BUCKET, raw)

    @property
    def tuned_m(self):
        """The M it was tuned at: the problem's own (exact), or the bucket's that served it."""
        return self.tuned_shape[0]


@dataclass(frozen=True)
class BestEntry:
    device_name: str
    math: str
    epilogue: str  # canonical
    config: Config

    @classmethod
    def _from_c(cls, e):
        return cls(_s(e.device_name), _s(e.math), _s(e.epilogue), Config._from_c(e.config))


@dataclass(frozen=True)
class TuneProgress:
    phase: str
    message: str
    done: int
    total: int
    best_ms: float    # < 0 when no correct candidate yet
    elapsed_s: float
    eta_s: float      # < 0 when unknown


@dataclass(frozen=True)
class Variant:
    name: str
    config: str
    strategy: str
    source_hash: str
    compile_status: int
    compile_log: str
    regs: int
    spill_bytes: int


@dataclass(frozen=True)
class Device:
    ordinal: int
    name: str
    fingerprint: str
    arch: str
    sm_count: int
    mem_bytes: int


def variants(problem, arch=None, compile=False, full=False):
    """The kernel variants applicable to problem on arch ("sm_90"; None: the current device's),
    likely-good first: the default search's space, or with full=True the larger one the
    exhaustive search takes. No GPU needed; compile=True compiles each with NVRTC."""
    L, out, msg = lib(), ctypes.POINTER(_lib.ft_variant_list)(), _msgbuf()
    flags = (_lib.FT_VARIANTS_COMPILE if compile else 0) | (_lib.FT_VARIANTS_FULL if full else 0)
    st = L.ft_variants(ctypes.byref(_cproblem(problem)), _cstr("arch", arch) if arch else None,
                       flags, ctypes.byref(out), msg, len(msg))
    if st != 0:
        _raise(st, _s(msg.value))
    try:
        return [Variant(_s(v.name), _s(v.config), _s(L.ft_strategy_name(v.strategy)), _s(v.source_hash),
                        v.compile_status, _s(v.compile_log), v.regs, v.spill_bytes)
                for v in out.contents.items[:out.contents.count]]
    finally:
        L.ft_variant_list_free(out)


def devices():
    """The visible CUDA devices; NoDeviceError (with the reason) when there are none."""
    L, n, msg = lib(), ctypes.c_int(), _msgbuf()
    st = L.ft_device_count(ctypes.byref(n), msg, len(msg))
    if st != 0:
        _raise(st, _s(msg.value))
    out = []
    for i in range(n.value):
        d = _lib.ft_device_desc()
        st = L.ft_device_describe(i, ctypes.byref(d), msg, len(msg))
        if st != 0:
            _raise(st, _s(msg.value))
        out.append(Device(d.ordinal, _s(d.name), _s(d.fingerprint), _s(d.arch), d.sm_count, d.mem_bytes))
    return out


def remove_database(path):
    """Deletes a closed fusedtune database file and its -wal / -shm files (nothing when path does
    not exist). A file that is not a fusedtune database raises DatabaseError (InputOutputError
    for a directory), a database open in this process InputOutputError; nothing is removed."""
    msg = _msgbuf()
    st = lib().ft_remove_database_v2(_cpath(path), msg, len(msg))
    if st != 0:
        _raise(st, _s(msg.value))


# ---- the database ----

class _Owned:
    """A library object freed by close(): as a context manager, and when collected."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


class Database(_Owned):
    """An ft_ctx: a database connection plus, once a call needs it, the current CUDA device.

    Database(path=None) opens $FUSEDTUNE_DB, else ./fusedtune.db. readonly never writes (cubins
    compiled for plans are then not cached); create makes the file when missing. Use it as a
    context manager or call close(); plans made from it are destroyed by close(). Calls are
    serialized by a lock: one ft_ctx serves one thread at a time (include/fusedtune.h).
    """

    def __init__(self, path=None, *, readonly=False, create=False):
        self.path = None if path is None else os.fspath(path)
        self.readonly = readonly
        self._lock = threading.RLock()
        self._plans = weakref.WeakSet()
        self._ctx = None
        L = lib()
        flags = (_lib.FT_OPEN_READONLY if readonly else 0) | (_lib.FT_OPEN_CREATE if create else 0)
        ctx = ctypes.c_void_p()
        st = L.ft_open(None if self.path is None else _cpath(self.path), flags, ctypes.byref(ctx))
        if st != 0:
            msg = _s(L.ft_errmsg(ctx)) if ctx.value else L.ft_status_string(st).decode()
            L.ft_close(ctx)
            _raise(st, msg)
        self._ctx = ctx

    def __repr__(self):
        state = "closed" if self._ctx is None else ("read-only" if self.readonly else "writable")
        return f"<fusedtune.Database {self.path or '(default)'} {state}>"

    @property
    def closed(self):
        return self._ctx is None

    def close(self):
        """Destroys the plans made from this database, then closes it. Closing twice is fine."""
        with self._lock:
            if self._ctx is None:
                return
            for plan in list(self._plans):
                plan.destroy()
            lib().ft_close(self._ctx)
            self._ctx = None

    def _handle(self):
        if self._ctx is None:
            raise InvalidArgumentError("the database is closed")
        return self._ctx

    def _check(self, st, cls=None):
        """Raises for a failed status, with ft_errmsg (call with the lock held)."""
        if st != 0:
            _raise(st, _s(lib().ft_errmsg(self._ctx)), cls)

    def lookup(self, problem, *, nearest=False, buckets=True, mode_only=False):
        """The best configuration for problem on the current CUDA device (needs the GPU: the
        device is part of the key). An M not tuned is served by its M bucket (Config.bucket,
        Config.tuned_m the bucket's M) unless buckets=False (the exact key only). nearest: fall back
        to the nearest tuned shape of another N or K (exact and bucket False). A problem in fp32
        (the default) is served at fp32 accuracy, by its fp32 or 3xtf32 result (Config.math says
        which) unless mode_only. NotFoundError when nothing applies."""
        p, out = _cproblem(problem), _lib.ft_config()
        with self._lock:
            self._check(lib().ft_lookup(self._handle(), ctypes.byref(p), _lookup_flags(nearest, buckets, mode_only),
                                        ctypes.byref(out)))
        return Config._from_c(out)

    def lookup_within(self, problem, tolerance):
        """The fastest stored configuration whose measured error is <= tolerance, across fp32,
        3xtf32 and tf32 for fp32 tensors (bf16: bf16 and the layer's fp8 form, fp8.fp8_epilogue, its
        error against the bf16 layer; fp16: that mode); Config.math says which mode.
        NotFoundError (naming the smallest error stored) when none is within it."""
        p, out = _cproblem(problem), _lib.ft_config()
        with self._lock:
            self._check(lib().ft_lookup_within(self._handle(), ctypes.byref(p), float(tolerance), ctypes.byref(out)))
        return Config._from_c(out)

    def lookup_entry_within(self, problem, tolerance, device_name=None):
        """lookup_within by device name (no GPU needed for a stored device). A BestEntry."""
        p, out = _cproblem(problem), _lib.ft_best_entry()
        with self._lock:
            self._check(lib().ft_lookup_entry_within(self._handle(), _cstr("device name", device_name) if device_name else None,
                                                     ctypes.byref(p), float(tolerance), ctypes.byref(out)))
        return BestEntry._from_c(out)

    def lookup_entry(self, problem, device_name=None, *, nearest=False, buckets=True, mode_only=False):
        """lookup that also names the device; device_name reads results stored for that device
        without touching a GPU. A BestEntry."""
        p, out = _cproblem(problem), _lib.ft_best_entry()
        with self._lock:
            self._check(lib().ft_lookup_entry(self._handle(), _cstr("device name", device_name) if device_name else None,
                                              ctypes.byref(p), _lookup_flags(nearest, buckets, mode_only),
                                              ctypes.byref(out)))
        return BestEntry._from_c(out)

    def best_entries(self):
        """Every stored (device, problem) best, ordered by device, then m, n, k. No GPU."""
        found, error = [], []

        def each(_user, entry):
            try:
                found.append(BestEntry._from_c(entry.contents))
                return 0
            except BaseException as e:  # never let an exception cross the C frame
                error.append(e)
                return 1

        cb = _lib.ft_best_entry_fn(each)
        with self._lock:
            self._check(lib().ft_each_best(self._handle(), cb, None))
        if error:
            raise error[0]
        return found

    def import_file(self, path):
        """Merges a JSON export (docs/FORMAT.md); the counts of rows added and read."""
        counts = _lib.ft_import_counts()
        with self._lock:
            self._check(lib().ft_import_file(self._handle(), _cpath(path), ctypes.byref(counts)))
        return {name: getattr(counts, name) for name, _ in counts._fields_}

    def export_file(self, path):
        """Writes the whole database to path as a JSON export (docs/FORMAT.md): import_file's input.
        Written as the CLI's export --out writes (ft_export_file): the database itself, its -wal,
        -shm and -journal files, symbolic links and what is not a regular file (a FIFO, a device)
        are refused with InputOutputError; path is replaced only by a complete export."""
        with self._lock:
            self._check(lib().ft_export_file(self._handle(), _cpath(path), 0))

    def plan(self, problem, config=None, *, nearest=True):
        """A launchable Plan of config for problem (config None: looked up here, nearest shape
        allowed unless nearest=False). Compiles with NVRTC only when the cubin is not cached."""
        from .plan import Plan  # plan.py builds on this module
        if config is None:
            config = self.lookup(problem, nearest=nearest)
        _typed("config", config, Config, "a fusedtune.Config (from lookup)")
        p, handle = _cproblem(problem), ctypes.c_void_p()
        with self._lock:
            self._check(lib().ft_plan_create(self._handle(), ctypes.byref(p), ctypes.byref(config.raw),
                                             ctypes.byref(handle)))
            plan = Plan(self, problem, config, handle)
            self._plans.add(plan)
        return plan

    def tune(self, problem, *, budget_s=None, strategy=None, repeats=None, retune=False, flush_l2=False,
             seed=None, max_candidates=None, worker=None, progress=None, mode_only=False):
        """Tunes problem on the current CUDA device (a writable database and a GPU needed) and
        returns the best Config. A problem in fp32 (the default) is tuned at fp32 accuracy, in
        3xtf32 then fp32 (the budget applies to each; Config.math says which serves), unless
        mode_only. Blocks up to budget_s (default 150 s). progress(TuneProgress)
        is called on the tuning thread. Ctrl-C ends the tune after the candidate in flight
        (Interrupted; what was measured stays stored). worker: the executable that runs
        candidates (default: $FUSEDTUNE_WORKER, else the fusedtune-worker the library finds from
        its own folder: libexec/fusedtune/ of its install, or beside it in a build tree)."""
        opt = _lib.tune_options_init()
        keep = []  # C strings and callbacks that must outlive the call
        if strategy is not None:
            keep.append(_cstr("strategy", strategy))
            opt.strategy = keep[-1]
        if budget_s is not None:
            opt.budget_s = float(budget_s)
        if repeats is not None:
            opt.repeats = _cint("repeats", int(repeats))
        opt.retune, opt.flush_l2, opt.mode_only = int(bool(retune)), int(bool(flush_l2)), int(bool(mode_only))
        if seed is not None:
            if not 0 <= int(seed) < (1 << 64):
                raise InvalidArgumentError(f"seed {seed} is out of range (0 to 2**64 - 1)")
            opt.seed = int(seed)
        if max_candidates is not None:
            opt.max_candidates = _cint("max_candidates", int(max_candidates))
        worker = worker if worker is not None else default_worker()
        if worker:
            keep.append(_cpath(worker))
            opt.worker_exe = keep[-1]
        stop = ctypes.c_int(0)
        opt.stop = ctypes.pointer(stop)
        cb_error = []
        if progress is not None:
            def report(_user, u):
                try:
                    v = u.contents
                    progress(TuneProgress(_s(v.phase), _s(v.message), v.done, v.total, v.best_ms, v.elapsed_s,
                                          v.eta_s))
                except BaseException as e:  # stop the tune; re-raised below
                    cb_error.append(e)
                    stop.value = 1
            opt.progress = _lib.ft_tune_progress_fn(report)
            opt.quiet = 0
            keep.append(opt.progress)
        p, best, result = _cproblem(problem), _lib.ft_config(), {}

        # The tune runs on a thread of its own, so that Ctrl-C reaches Python meanwhile, on the
        # caller's current CUDA device (a per-thread setting): without the runtime to set it
        # there, on the calling thread.
        rt, device = _lib.cudart(), ctypes.c_int(-1)
        if rt is not None and rt.cudaGetDevice(ctypes.byref(device)) != 0:
            device.value = -1

        def body():
            if device.value >= 0:
                rt.cudaSetDevice(device.value)
            result["st"] = lib().ft_tune(self._ctx, ctypes.byref(p), ctypes.byref(opt), ctypes.byref(best))
            result["msg"] = _s(lib().ft_errmsg(self._ctx))

        with self._lock:
            self._handle()
            if rt is None:
                body()
            else:
                t = threading.Thread(target=body, name="fusedtune-tune", daemon=True)
                t.start()
                try:
                    while t.is_alive():
                        t.join(0.2)
                except KeyboardInterrupt:
                    stop.value = 1
                    t.join()
                    raise
        if cb_error:
            raise cb_error[0]
        if result["st"] != 0:
            _raise(result["st"], result["msg"], Interrupted if result["st"] == Interrupted.status else None)
        return Config._from_c(best)

    def tune_command(self, problem):
        """The `fusedtune tune` command that tunes problem into this database."""
        return _typed("problem", problem, Problem, "a fusedtune.Problem").tune_command(self.path)

    def not_tuned(self, problem, detail):
        """NotTunedError for problem, naming the command that tunes it."""
        cmd = self.tune_command(problem)
        return NotTunedError(f"{detail}\nTune it first: {cmd}", command=cmd, status=NotTunedError.status)


def default_worker():
    """The worker executable tune() passes: None, which leaves it to the library
    ($FUSEDTUNE_WORKER, else the fusedtune-worker it finds from its own folder: installed,
    libexec/fusedtune/ beside lib/; in a build tree, beside the library)."""
    return None


__all__ = ["MathMode", "math_modes", "math_mode", "Param", "Epilogue", "inspect_epilogue", "presets", "Problem",
           "Config", "BestEntry", "TuneProgress", "Variant", "Device", "variants", "devices", "remove_database",
           "Database", "default_worker", "FusedtuneError", "ParseError"]
