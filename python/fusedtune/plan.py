"""Plans: a loaded configuration launched by device pointers (ft_plan, ft_plan_launch,
ft_plan_launch_ptrs), made by core.Database.plan()."""
import ctypes
import json
import numbers

from . import _lib
from ._lib import lib
from .core import _Owned, _cstr, _typed, inspect_epilogue, math_mode
from .errors import ArgumentTypeError, InvalidArgumentError


def _in_slot_order(what, values, need):
    """values as a list: a list or tuple, in slot order. A dict (its keys would be taken for
    values), a set (no order) or a str is refused with ArgumentTypeError."""
    if not isinstance(values, (list, tuple)):
        raise ArgumentTypeError(f"{what} must be a list or tuple of {need} in slot order, not "
                                f"{type(values).__name__}" + (" (names go to Plan.make_args)" if isinstance(values, dict)
                                                              else ""))
    return list(values)


def slot_arrays(slots, vecs=(), scalars=()):
    """ft_plan_launch_ptrs's arrays as ctypes arrays (void *[], float[]) in an epilogue's slot order:
    slots its (name, kind, default) per parameter (Epilogue.params' order), vecs a device pointer
    per vector slot, scalars a value per scalar slot (None: the slot's default), each listed in
    slot order without the other kind."""
    count = max(1, len(slots))
    va, sa = (ctypes.c_void_p * count)(), (ctypes.c_float * count)()
    vi = iter(_in_slot_order("vecs", vecs, "device pointers (ints)"))
    si = iter(_in_slot_order("scalars", scalars, "numbers (None: the default)"))
    for i, (name, kind, default) in enumerate(slots):
        if kind == "scalar":
            v = next(si, None)
            v = default if v is None else v
            if v is None:
                raise InvalidArgumentError(f"scalar {name} has no default in the epilogue and no value")
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise ArgumentTypeError(f"scalar {name} must be a number, not {type(v).__name__}")
            sa[i] = float(v)
        else:
            v = next(vi, None)
            if not v:
                raise InvalidArgumentError(f"{kind} vector {name} has no pointer")
            va[i] = _typed(f"{kind} vector {name}'s pointer", v, int, "an int (a device address)")
    if next(vi, None) is not None or next(si, None) is not None:
        raise InvalidArgumentError(f"more vectors or scalars than the epilogue's {len(slots)} parameters")
    return va, sa


def _presplit(config_json):
    """Whether a configuration's JSON pre-splits the operands (3xtf32, "presplit": 1)."""
    try:
        return json.loads(config_json or "{}").get("presplit", 0) == 1
    except (ValueError, AttributeError):
        return False


class Plan(_Owned):
    """A loaded configuration ready to launch (ft_plan), made by Database.plan()."""

    def __init__(self, db, problem, config, handle):
        self.db, self.problem, self.config = db, problem, config
        self.mode = math_mode(problem.math)
        self._handle = handle
        # A pre-split 3xtf32 configuration keeps W split between launches: weight_changed().
        self.presplit = _presplit(config.config)
        self.weight_seen = None  # (address, version) of the weight it last launched with
        self._forget_hook = None  # called with the ft_plan's address before it is destroyed

    def __repr__(self):
        return (f"<fusedtune.Plan {self.problem.shape} {self.mode.name} {self.config.strategy} {self.config.name}"
                f"{'' if self.config.exact else (' (bucket M=%d)' % self.config.tuned_m) if self.config.bucket else ' (nearest: tuned at %dx%dx%d)' % self.config.tuned_shape}>")

    def destroy(self):
        """Frees the plan (also done by its database's close()). Twice is fine."""
        with self.db._lock:
            if self._handle is not None and self._handle.value:
                if self._forget_hook is not None:  # whoever holds the pointer (fusedtune.torch's C++ op) lets go
                    self._forget_hook(self._handle.value)
                lib().ft_plan_destroy(self._handle)
            self._handle = None

    close = destroy

    def weight_changed(self):
        """Says that the weight's contents changed in place since the last launch: a pre-split
        3xtf32 plan (configuration "presplit") splits it again at its next launch (ft_plan_weight_changed).
        Nothing for other plans."""
        with self.db._lock:
            if self._handle is not None and self._handle.value:
                lib().ft_plan_weight_changed(self._handle)

    def make_args(self, x, w, y, vecs=None, scalars=None, dtype=None):
        """An ft_args for launch_args(): device pointers as ints, vecs {name: pointer},
        scalars {name: float}; dtype the FT_DTYPE_* (default: the plan's mode's)."""
        vecs, scalars = vecs or {}, scalars or {}
        a = _lib.ft_args()
        a.x, a.w, a.y = x, w, y
        names = [_cstr("argument name", n) for n in vecs] + [_cstr("argument name", n) for n in scalars]
        va = (_lib.ft_vec_arg * max(1, len(vecs)))(*[_lib.ft_vec_arg(nm, p) for nm, p in zip(names, vecs.values())])
        sa = (_lib.ft_scalar_arg * max(1, len(scalars)))(
            *[_lib.ft_scalar_arg(nm, float(v)) for nm, v in zip(names[len(vecs):], scalars.values())])
        a.vecs, a.n_vecs = ctypes.cast(va, ctypes.POINTER(_lib.ft_vec_arg)), len(vecs)
        a.scalars, a.n_scalars = ctypes.cast(sa, ctypes.POINTER(_lib.ft_scalar_arg)), len(scalars)
        a.dtype = self.mode.ft_dtype if dtype is None else dtype
        a._keep = (names, va, sa)  # the arrays and names must live as long as the struct
        return a

    def launch_args(self, args, stream=0):
        """Enqueues the plan with a prepared ft_args on a cudaStream_t (an int; 0: default)."""
        self._launch_xy(args, None, None, stream)

    def _launch_xy(self, args, x, y, stream=0):
        """launch_args(), with args' x and y pointers set first where given, under the lock, so
        that threads sharing one prepared ft_args (FusedLinear's repeat calls) never mix them."""
        with self.db._lock:
            if self._handle is None:
                raise InvalidArgumentError("the plan was destroyed")
            if x is not None:
                args.x, args.y = x, y
            self.db._check(lib().ft_plan_launch(self._handle, ctypes.byref(args), stream or None))

    def slot_arrays(self, vecs=(), scalars=()):
        """ft_plan_launch_ptrs's arrays for this plan's epilogue (see slot_arrays())."""
        return slot_arrays([(p.name, p.kind, p.default) for p in inspect_epilogue(self.problem.epilogue).params],
                           vecs, scalars)

    def launch_ptrs(self, x, w, y, arrays, stream=0):
        """Enqueues the plan through ft_plan_launch_ptrs (the compiled launch path where it was
        built, else ctypes): x, w, y device pointers (ints), arrays from slot_arrays() (made once,
        reused by every launch with the same vectors and scalars)."""
        from . import _launch
        if self._handle is None:
            raise InvalidArgumentError("the plan was destroyed")
        va, sa = arrays
        st = _launch.launcher(self.db._lock)(self._handle.value, x, w, y, ctypes.addressof(va), ctypes.addressof(sa),
                                             stream or 0)
        if st:
            with self.db._lock:
                self.db._check(st)

    def launch(self, x, w, y, vecs=None, scalars=None, dtype=None, stream=0):
        """Enqueues y = E(x W^T) on stream (asynchronous): x, w, y and vecs are device pointers
        (ints) of the plan's element type; the library checks alignment and names before
        launching (InvalidArgumentError, nothing launched)."""
        self.launch_args(self.make_args(x, w, y, vecs, scalars, dtype), stream)


__all__ = ["Plan", "slot_arrays"]
