"""fusedtune.torch: FusedLinear, an inference-only nn.Module for nn.Linear + an elementwise epilogue.

    from fusedtune.torch import FusedLinear
    layer = FusedLinear.from_linear(lin, "min(x + bias, c) - c where c = 2").cuda()
    with torch.inference_mode():
        y = layer(x)            # one tuned kernel (or cuBLAS + one fused pass) on torch's stream

y = E(x W^T) with E in fusedtune's expression language (docs/EPILOGUE.md); `bias` in E is the
layer's bias. docs/PYTHON.md describes the module, its errors and how results are looked up.
"""
import math as _math
import warnings

import torch
from torch import nn

from . import core
from ._binding import Binding, check_no_grad, check_tensor, dtype_name
from .errors import InvalidArgumentError, NotFoundError


# The current stream's cudaStream_t of a device index, without building a torch.cuda.Stream
# (a private but long-standing torch function; the public path where it is missing).
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


class NearestShapeWarning(UserWarning):
    """A FusedLinear call runs a configuration tuned at another shape (correct, maybe slower)."""


class FusedLinear(nn.Module):
    """nn.Linear followed by an epilogue, as one tuned fusedtune kernel. Inference only.

    FusedLinear(in_features, out_features, bias=True, device=None, dtype=None, *, epilogue=None,
                math=None, params=None, db=None, nearest=True, autotune=False)

    epilogue  the expression (default: "x + bias", or "x" without bias); x is the GEMM result,
              bias the layer's bias. With a bias, the expression must use it.
    math      the math mode; default from the dtype: float32 -> "fp32", bfloat16 -> "bf16",
              float16 -> "fp16". "tf32" (fp32 tensors, tensor cores) must be asked for.
    params    {name: value} for the epilogue's other parameters: a number for a scalar, a tensor
              for a col / row vector (registered as a buffer of that name). forward(x, name=...)
              overrides either; scalars with a default in the expression need neither. A matrix
              operand (`mat r`, e.g. "x + bias + r where mat r": a residual) is given per call,
              forward(x, r=h), shaped like the output ([..., out_features]), contiguous, apart
              from the output.
    db        a database path (default: $FUSEDTUNE_DB, else ./fusedtune.db) or a
              fusedtune.Database (used for the device it first serves).
    nearest   with no result tuned for a call's N and K (nor an M bucket of them), run the one
              tuned at the nearest shape (with a NearestShapeWarning naming the tune command),
              instead of raising.

    A call's M (the product of x's leading dimensions) not tuned exactly is served, silently, by
    its M bucket: the smallest M tuned with the layer's N, K, epilogue and mode that is >= M
    (beyond the largest, the largest); `fusedtune tune --shape 1..4096xNxK` tunes the powers of
    two. config_for(m) says which: .exact, .bucket and .tuned_m of the Config that serves m. With
    autotune, an M that a bucket serves is not tuned.
    autotune  False; True or a dict of Database.tune() options (budget_s, max_candidates, ...):
              tune a shape on its first call when nothing is tuned for it (takes up to the
              budget, 150 s by default; needs a writable database).

    A shape with no usable result raises fusedtune.NotTunedError naming the `fusedtune tune`
    command to run. Parameters are created with requires_grad=False; an input or parameter that
    requires grad while grad mode is on is an InvalidArgumentError (there is no backward).
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, *, epilogue=None,
                 math=None, params=None, db=None, nearest=True, autotune=False):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = nn.Parameter(torch.empty((self.out_features, self.in_features), **factory), requires_grad=False)
        if bias:
            self.bias = nn.Parameter(torch.empty(self.out_features, **factory), requires_grad=False)
        else:
            self.register_parameter("bias", None)
        nn.Linear.reset_parameters(self)
        self._setup(epilogue, math, params, db, nearest, autotune)

    @classmethod
    def from_linear(cls, linear, epilogue=None, *, math=None, params=None, db=None, nearest=True, autotune=False):
        """A FusedLinear over linear's weight and bias: the same storage (no copy), as parameters
        that do not require grad."""
        if not isinstance(linear, nn.Linear):
            raise InvalidArgumentError(f"from_linear takes an nn.Linear, not {type(linear).__name__}")
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = nn.Parameter(linear.weight.detach(), requires_grad=False)
        if linear.bias is not None:
            self.bias = nn.Parameter(linear.bias.detach(), requires_grad=False)
        else:
            self.register_parameter("bias", None)
        self._setup(epilogue, math, params, db, nearest, autotune)
        return self

    def _setup(self, epilogue, math, params, db, nearest, autotune):
        text = epilogue if epilogue is not None else ("x + bias" if self.bias is not None else "none")
        self.epilogue = core.inspect_epilogue(text)
        if self.epilogue.uses_x2:
            raise InvalidArgumentError(f"epilogue '{self.epilogue.canonical}' uses x2, the product with a second "
                                       f"weight, but this layer has one weight: no strategy of this version "
                                       f"computes gated pairs yet")
        scalars, vectors = {}, {}
        for name, v in (params or {}).items():
            (vectors if isinstance(v, torch.Tensor) and v.dim() > 0 else scalars)[name] = v
        self._binding = Binding(self.epilogue, self.bias is not None, scalars, tuple(vectors))
        for name, t in vectors.items():
            if hasattr(self, name):
                raise InvalidArgumentError(f"epilogue vector {name!r} would hide the module's attribute of that "
                                           f"name: rename it in the expression")
            self.register_buffer(name, t)
        self.math = None if math is None else core.math_mode(math).name
        if self.math is not None:
            self._mode()  # a mode that does not fit the dtype fails now, not at the first call
        if not isinstance(db, (core.Database, type(None))):
            db = str(db)
        self._db_arg, self._nearest, self._autotune = db, bool(nearest), autotune
        self._dbs, self._plans, self._warned = {}, {}, set()
        # The vectors a call without keyword arguments takes from the layer (bias, buffers), and
        # the last such call's signature, plan and prepared arguments (forward's fast path).
        self._vec_names = tuple(p.name for p in self.epilogue.params if p.kind not in ("scalar", "mat"))
        # The matrices every call gives (forward(x, r=...)): a call with exactly these keyword
        # arguments may take the fast path too, their new addresses set in the prepared arguments.
        self._mat_names = frozenset(p.name for p in self.epilogue.params if p.kind == "mat")
        self._fast = None

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"epilogue='{self.epilogue.canonical}', math={self.math or 'from dtype'}")

    def __getstate__(self):
        # Open databases and loaded plans belong to this process: a copy makes its own.
        state = self.__dict__.copy()
        state["_dbs"], state["_plans"], state["_fast"] = {}, {}, None
        if isinstance(state["_db_arg"], core.Database):
            state["_db_arg"] = state["_db_arg"].path
        return state

    def _mode(self):
        """The MathMode for the weight's dtype (and the asked-for mode, which must fit it)."""
        dt = dtype_name(self.weight)
        if self.math is None:
            if dt not in core.DEFAULT_MODE:
                raise InvalidArgumentError(f"weight is {dt}: FusedLinear runs float32, bfloat16 and float16 layers")
            return core.math_mode(core.DEFAULT_MODE[dt])
        mode = core.math_mode(self.math)
        if mode.dtype != dt:
            raise InvalidArgumentError(f"math mode {mode.name} computes on {mode.dtype} tensors, but weight is {dt}")
        return mode

    def _db_for(self, index):
        db = self._dbs.get(index)
        if db is not None:
            return db
        if isinstance(self._db_arg, core.Database):
            db = self._db_arg
            owner = getattr(db, "_torch_device", index)
            if owner != index:
                raise InvalidArgumentError(f"the Database given serves cuda:{owner} (a database handle binds the "
                                           f"device it first uses); cuda:{index} needs a path or another Database")
            db._torch_device = index
        else:
            db = core.Database(self._db_arg, readonly=not self._autotune)
        self._dbs[index] = db
        return db

    def plan_for(self, m, device=None):
        """The Plan a call with m input rows runs (looked up, or tuned, on first use)."""
        device = torch.device(device) if device is not None else self.weight.device
        if device.type != "cuda":
            raise InvalidArgumentError(f"weight is on {device.type}: move the layer to a CUDA device first")
        index = device.index if device.index is not None else torch.cuda.current_device()
        mode = self._mode()
        key = (index, m, mode.name)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        problem = core.Problem(m, self.out_features, self.in_features, self.epilogue.canonical, mode.name)
        with torch.cuda.device(index):
            db = self._db_for(index)
            try:
                config = db.lookup(problem, nearest=self._nearest and not self._autotune)
            except NotFoundError as e:
                if not self._autotune:
                    raise db.not_tuned(problem, str(e)) from None
                options = self._autotune if isinstance(self._autotune, dict) else {}
                config = db.tune(problem, **options)
            if not config.exact and not config.bucket and key not in self._warned:
                self._warned.add(key)
                warnings.warn(f"fusedtune: nothing tuned for {problem.shape} ({mode.name}, "
                              f"'{problem.epilogue}'); running {config.name}, tuned at "
                              "%dx%dx%d. Tune this shape: %s" % (*config.tuned_shape, db.tune_command(problem)),
                              NearestShapeWarning, stacklevel=3)
            plan = db.plan(problem, config)
        self._plans[key] = plan
        return plan

    def config_for(self, m, device=None):
        """The Config a call with m input rows runs (plan_for(m).config): .exact, or .bucket with
        .tuned_m the M bucket that serves m."""
        return self.plan_for(m, device).config

    def forward(self, x, **params):
        """y = E(x W^T) for x [..., in_features]; params: epilogue parameters for this call."""
        fast, sig = self._fast, None
        if fast is not None and params.keys() == self._mat_names and isinstance(x, torch.Tensor):
            sig = self._signature(x, params)
            if sig == fast[0]:
                # Everything the checks below looked at is as it was at the last checked call
                # (on the current device): only the pointers that may change (x, a new y, the
                # matrices) go on; the library checks the matrices' alignment and overlap again.
                _, plan, args, dev, mats = fast
                y = torch.empty(x.shape[:-1] + (self.out_features,), dtype=self.weight.dtype, device=dev)
                self._enqueue(plan, args, dev, True, x.data_ptr(), y.data_ptr(),
                              [(i, params[name].data_ptr()) for i, name in mats])
                return y
        return self._forward_checked(x, params, sig)

    def _signature(self, x, mats=None):
        """What a call's checks and its launch's arguments depend on, besides x's and the
        matrices' addresses: grad mode, the asked-for mode, the current device, and each tensor's
        dtype, device, shape, contiguity and requires_grad (the layer's tensors also their
        addresses; x its alignment). mats: the call's matrices by name."""
        sig = [torch.is_grad_enabled(), self.math, torch.cuda.current_device(), x.data_ptr() % 16]
        own = [getattr(self, name) for name in self._vec_names]
        given = [mats[name] for name in sorted(self._mat_names)] if mats else []
        for i, t in enumerate((x, self.weight, *own, *given)):
            if not isinstance(t, torch.Tensor):
                return None  # e.g. bias set to None: the checked path says what is wrong
            moving = i == 0 or i >= 2 + len(own)  # x and the matrices: new addresses each call
            sig += (0 if moving else t.data_ptr(), t.dtype, t.device, t.shape, t.is_contiguous(), t.requires_grad)
        return tuple(sig)

    def _enqueue(self, plan, args, dev, current, x_ptr, y_ptr, vec_ptrs=None):
        """Launches on dev's current stream (current: dev is the current device); vec_ptrs:
        (index in args.vecs, pointer) pairs to set first (the matrices of a fast call)."""
        stream = _raw_stream(dev.index) if _raw_stream else torch.cuda.current_stream(dev).cuda_stream
        try:
            if current:
                plan._launch_xy(args, x_ptr, y_ptr, stream, vec_ptrs)
            else:
                with torch.cuda.device(dev):
                    plan._launch_xy(args, x_ptr, y_ptr, stream, vec_ptrs)
        except InvalidArgumentError as e:
            msg = e.message.replace("ft_plan_launch: w ", "weight ").replace("ft_plan_launch: ", "")
            raise InvalidArgumentError(f"FusedLinear: {msg}") from None

    def _forward_checked(self, x, params, sig=None):
        """forward() with every check; sig: x's _signature() where forward already took it."""
        grad = torch.is_grad_enabled()
        if not isinstance(x, torch.Tensor):
            raise InvalidArgumentError(f"x must be a tensor, not {type(x).__name__}")
        w, dev = self.weight, self.weight.device
        check_no_grad("x", x, grad)
        check_no_grad("weight", w, grad)
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            raise InvalidArgumentError(f"x has shape {list(x.shape)}, expected [..., {self.in_features}] "
                                       f"(in_features)")
        mode = self._mode()
        check_tensor("weight", w, dtype=mode.dtype, device=None, shape=(self.out_features, self.in_features))
        lead = tuple(x.shape[:-1])
        m = _math.prod(lead)
        check_tensor("x", x, dtype=mode.dtype, device=dev, shape=tuple(x.shape))
        vecs, scalars = self._binding.bind(m, self.out_features, lambda name: getattr(self, name), params,
                                           dtype=mode.dtype, device=dev, grad_enabled=grad, lead=lead)
        y = torch.empty(lead + (self.out_features,), dtype=w.dtype, device=dev)
        if m == 0:
            return y
        plan = self.plan_for(m, dev)
        args = plan.make_args(x.data_ptr(), w.data_ptr(), y.data_ptr(),
                              {k: t.data_ptr() for k, t in vecs.items()}, scalars)
        current = dev.index == torch.cuda.current_device()
        self._enqueue(plan, args, dev, current, x.data_ptr(), y.data_ptr())
        if params.keys() == self._mat_names and current:  # launched: the next such call may skip the checks
            mats = tuple((list(vecs).index(name), name) for name in self._mat_names)
            self._fast = (sig if sig is not None else self._signature(x, params), plan, args, dev, mats)
        return y


__all__ = ["FusedLinear", "NearestShapeWarning"]
