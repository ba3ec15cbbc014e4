"""fusedtune.torch.layer: FusedLinear, an inference-only nn.Module for nn.Linear + an elementwise epilogue.

    from fusedtune.torch import FusedLinear
    layer = FusedLinear.from_linear(lin, "min(x + bias, c) - c where c = 2").cuda()
    with torch.inference_mode():
        y = layer(x)            # one tuned kernel (or cuBLAS + one fused pass) on torch's stream

y = E(x W^T) with E in fusedtune's expression language (docs/EPILOGUE.md); `bias` in E is the
layer's bias. A gated pair (SwiGLU's silu(gate(h)) * up(h)): FusedLinear.from_gated(gate, up,
"silu(x) * x2"), its weight the two interleaved once (interleave_gated). docs/PYTHON.md describes
the module, its errors and how results are looked up.
"""
import ctypes
import math as _math
import warnings

import torch
from torch import nn

from .. import _launch, core
from . import _native, op as torch_op
from ..plan import slot_arrays
from .._binding import Binding, check_no_grad, check_tensor, dtype_name
from .._lib import lib
from ..errors import InvalidArgumentError, NotFoundError, UnsupportedError, error_for


# The current stream's cudaStream_t of a device index and the current device, without building a
# torch.cuda.Stream or initializing anything (private but long-standing torch functions; the
# public paths where they are missing).
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream)
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
_grad_enabled = torch.is_grad_enabled
_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)
_Tensor = torch.Tensor
_op_call = torch_op._call


class NearestShapeWarning(UserWarning):
    """A FusedLinear call runs a configuration tuned at another shape (correct, maybe slower)."""


class FusedLinear(torch_op.PreparedArgs, nn.Module):
    """nn.Linear followed by an epilogue, as one tuned fusedtune kernel. Inference only.

    FusedLinear(in_features, out_features, bias=True, device=None, dtype=None, *, epilogue=None,
                math=None, params=None, db=None, nearest=True, autotune=False)

    epilogue  the expression (default: "x + bias", or "x" without bias); x is the GEMM result,
              bias the layer's bias. With a bias, the expression must use it.
    math      the math mode; default from the dtype: float32 -> fp32 accuracy (served by the fp32
              or the 3xtf32 result, whichever is faster; both within cuBLAS SGEMM's error),
              bfloat16 -> "bf16", float16 -> "fp16". math="fp32" means FFMA kernels and cuBLAS
              SGEMM alone; "tf32" (fp32 tensors, tensor cores) must be asked for.
    params    {name: value} for the epilogue's other parameters: a number for a scalar, a tensor
              for a col / row vector (registered as a buffer of that name). forward(x, name=...)
              overrides either; scalars with a default in the expression need neither. A matrix
              operand (`mat r`, e.g. "x + bias + r where mat r": a residual) is given per call,
              forward(x, r=h), shaped like the output ([..., out_features]), contiguous.
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
              budget, 150 s by default; needs a writable database, created where the path
              names none).

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
    def from_gated(cls, gate, up, epilogue="silu(x) * x2", *, math=None, params=None, db=None, nearest=True,
                   autotune=False, output=None):
        """A gated pair's layer: y = E(x, x2) with x = h gate.weight^T and x2 = h up.weight^T (Hugging
        Face's SwiGLU MLP: gate_proj and up_proj, E = "silu(x) * x2"; GeGLU: "gelu_tanh(x) * x2").
        The layer's weight is the two interleaved once (interleave_gated: a new [2N, K] tensor,
        2N x K elements); out_features is N, a multiple of 8 (16 in fp8). Biases are not taken from
        the layers: with biases, name them in E as col vectors and pass them in params (E =
        "silu(x + b1) * (x2 + b2) where col b1, col b2", params={"b1": gate.bias, "b2": up.bias});
        layers with a bias and no vector in params are refused. math="fp8" gives an FP8Linear of
        the two bf16 layers (fusedtune.fp8.FP8Linear.from_gated: E unscaled, as here; each weight
        quantized on its own; the vectors of params, bf16 biases included, held as fp32 copies;
        output="e4m3": y's codes and row scales for a next fp8 layer, fusedtune.fp8.E4M3Rows)."""
        for name, lin in (("gate", gate), ("up", up)):
            if not isinstance(lin, nn.Linear):
                raise InvalidArgumentError(f"from_gated takes two nn.Linear, and {name} is {type(lin).__name__}")
        _check_gated_biases("from_gated", gate, up, params)
        if math == "fp8":  # each weight quantized per output channel once (sw, sw2), x per token on every call
            from ..fp8 import FP8Linear
            return FP8Linear.from_gated(gate, up, epilogue, db, params, output=output or "bf16")
        _no_output_form(output)
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self.in_features, self.out_features = gate.in_features, gate.out_features
        self.weight = nn.Parameter(interleave_gated(gate.weight.detach(), up.weight.detach()), requires_grad=False)
        self.register_parameter("bias", None)
        self._setup(epilogue, math, params, db, nearest, autotune, gated=True)
        return self

    @classmethod
    def from_linear(cls, linear, epilogue=None, *, math=None, params=None, db=None, nearest=True, autotune=False,
                    output=None):
        """A FusedLinear over linear's weight and bias: the same storage (no copy), as parameters
        that do not require grad. With math="fp8", output="e4m3" makes the layer return y's e4m3
        codes and row scales (fusedtune.fp8.E4M3Rows), which a next fp8 layer takes as its x."""
        if not isinstance(linear, nn.Linear):
            raise InvalidArgumentError(f"from_linear takes an nn.Linear, not {type(linear).__name__}")
        if math == "fp8":  # W quantized per output channel once, x per token on every call
            from ..fp8 import FP8Linear
            return FP8Linear.from_linear(linear, epilogue, db, params, output=output or "bf16")
        _no_output_form(output)
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

    @staticmethod
    def from_fp8(weight, weight_scale, bias=None, epilogue=None, *, db=None, output=None):
        """An fp8 layer of float8_e4m3fn weight [N, K] with its fp32 per-channel weight_scale [N]
        and a bf16 bias: y = E(x W^T) in bf16 (output="e4m3": its codes and row scales, E4M3Rows),
        x bf16 quantized per token on every call, or E4M3Rows as they are (fusedtune.fp8.FP8Linear)."""
        from ..fp8 import FP8Linear
        return FP8Linear(weight, weight_scale, bias, epilogue, db, output=output or "bf16")

    def _setup(self, epilogue, math, params, db, nearest, autotune, gated=False):
        text = epilogue if epilogue is not None else ("x + bias" if self.bias is not None else "none")
        self.epilogue = core.inspect_epilogue(text)
        if self.epilogue.uses_x2 != gated:
            raise InvalidArgumentError(
                f"epilogue '{self.epilogue.canonical}' uses x2, the product with a second weight, but this layer "
                f"has one weight: FusedLinear.from_gated(gate, up, E) makes a gated pair's layer" if not gated else
                f"from_gated: epilogue '{self.epilogue.canonical}' does not use x2 (up's product), e.g. "
                f"'silu(x) * x2'")
        # The weight's rows: a gated pair's interleaved weight has two per output column.
        self._w_rows = 2 * self.out_features if gated else self.out_features
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
        if self.math == "fp8":  # an fp8 layer holds e4m3 weights and their scales: fusedtune.fp8.FP8Linear
            raise UnsupportedError("FusedLinear: math fp8 takes quantized weights: FusedLinear.from_linear(lin, E, "
                                   "math='fp8') or FusedLinear.from_fp8(weight, weight_scale, bias, E)")
        if self.math is not None:
            self._mode()  # a mode that does not fit the dtype fails now, not at the first call
        if not isinstance(db, (core.Database, type(None))):
            db = str(db)
        self._db_arg, self._nearest, self._autotune = db, bool(nearest), autotune
        self._dbs, self._plans, self._warned = {}, {}, set()
        # The epilogue's parameters in slot order, as (name, kind, default) of plain values (what
        # the traced forward iterates over), and the vectors a call without keyword arguments
        # takes from the layer: the bias (a parameter) and buffers.
        self._slots = tuple((p.name, p.kind, p.default) for p in self.epilogue.params)
        # Matrices count among them but are never held (each call gives one, forward(x, r=...)):
        # such a call takes the checked path.
        self._vec_names = tuple(p.name for p in self.epilogue.params if p.kind != "scalar")
        self._fast = None   # forward's fast path: see _FastState
        self._op_args = {}  # prepared slot arrays of the op's calls, by pointers and scalars
        # y's trailing dimensions (ft_output_shape, the same at every M): (out_features,), none
        # after a row reduction (y is [...]), (out_features // w,) after a pool.
        shape = core.Problem(1, self.out_features, self.in_features, self.epilogue.canonical).output_shape
        self._y_tail = tuple(shape[1:])
        self._native_args = None  # forward's (operands, scalars) for the operator: see _native_call_args
        self._call_names = frozenset(name for name, _, _ in self._slots if name != "bias")  # forward(x, name=...)
        self._register_op()

    def _register_op(self):
        """A handle for the operator, and the layer described to its C++ implementation (_native)."""
        self.op_handle = torch_op.register(self)
        self._describe_op()

    def _describe_op(self):
        dtypes = (core.DEFAULT_MODE if self.math is None else {core.math_mode(self.math).dtype: None})
        _native.layer(self.op_handle, n=self.out_features, k=self.in_features, w_rows=self._w_rows,
                      w_dtypes=[_native.FT_DTYPES[d] for d in dtypes], x_dtype=-1, y_tail=self._y_tail,
                      slots=[(name, kind, -1) for name, kind, _ in self._slots])

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"epilogue='{self.epilogue.canonical}', math={self.math or 'from dtype'}")

    def __getstate__(self):
        # Open databases and loaded plans belong to this process: a copy makes its own.
        state = self.__dict__.copy()
        state["_dbs"], state["_plans"], state["_fast"], state["_op_args"] = {}, {}, None, {}
        state["_native_args"] = None
        if isinstance(state["_db_arg"], core.Database):
            state["_db_arg"] = state["_db_arg"].path
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._register_op()  # the copy's own: the op finds a layer by its handle

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
            db = core.Database(self._db_arg, readonly=not self._autotune, create=bool(self._autotune))
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
                # No math given: fp32 tensors at fp32 accuracy (fp32 or 3xtf32, whichever serves).
                config = db.lookup(problem, nearest=self._nearest and not self._autotune,
                                   mode_only=self.math is not None)
            except NotFoundError as e:
                if not self._autotune:
                    raise db.not_tuned(problem, str(e)) from None
                options = self._autotune if isinstance(self._autotune, dict) else {}
                config = db.tune(problem, **{"mode_only": self.math is not None, **options})
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

    def __setattr__(self, name, value):
        # A new weight, bias, buffer or math mode: the fast path's recorded state and the
        # operator's prepared arguments no longer hold; a new mode, the C++ op's description.
        super().__setattr__(name, value)
        if name not in ("_fast", "_native_args"):
            self.__dict__["_fast"] = self.__dict__["_native_args"] = None
        if name == "math" and "op_handle" in self.__dict__:
            self._describe_op()  # its plans dropped too

    def __delattr__(self, name):
        super().__delattr__(name)
        self.__dict__["_fast"] = self.__dict__["_native_args"] = None

    def _native_call_args(self):
        """(operands, scalars) of a call without keyword arguments, from the layer's bias, buffers
        and scalars (kept until an attribute is set); None when a slot has no value held (a matrix,
        a vector given per call): such calls build their lists (_forward_op)."""
        operands, scalars, names = [], [], []
        for name, kind, default in self._slots:
            if kind == "scalar":
                v = self._binding.scalars.get(name, default)
                if v is None:
                    return None
                scalars.append(float(v))
            elif kind != "mat" and (name == "bias" or name in self._binding.buffers):
                t = getattr(self, name)
                if not isinstance(t, torch.Tensor):
                    return None
                operands.append(t)
                names.append(name)
            else:
                return None
        self.__dict__["_native_args"] = (operands, scalars, names)
        return self._native_args

    def _native_args_current(self, a):
        """Whether the held operands are still the module's: functional_call and direct writes to
        _parameters or _buffers replace them without __setattr__."""
        p, b = self._parameters, self._buffers
        for name, t in zip(a[2], a[0]):
            if (p.get(name) if name in p else b.get(name)) is not t:
                return False
        return True

    def forward(self, x, **params):
        """y = E(x W^T) for x [..., in_features]: y [..., out_features], [...] after a row reduction
        (logsumexp, rowsum, ...; docs/EPILOGUE.md); params: epilogue parameters for this call."""
        if _compiling():
            return self._forward_op(x, params)
        if _native._C is not None and x.__class__ is _Tensor:  # the C++ operator: one call, the rest in C++
            if not params:
                a = self._native_args or self._native_call_args()
                if a is not None and not self._native_args_current(a):
                    a = self._native_call_args()
                w = self._parameters.get("weight")  # None in a DataParallel replica: the checked path
                if a is not None and w is not None:
                    return _op_call(x, w, a[0], a[1], self.op_handle)
            elif all(name in self._call_names for name in params):  # a matrix, a row vector, ...
                return self._forward_op(x, params)
            return self._forward_checked(x, params)  # what is missing or unknown, named
        f = self._fast
        if f is not None and not params and x.__class__ is _Tensor:
            hit = f.shapes.get(x.shape)
            grad = _grad_enabled()
            if (hit is not None and x.dtype is f.dtype and x.is_contiguous() and x.get_device() == f.index
                    and _current_device() == f.index and grad is f.grad
                    and (not grad or not (x.requires_grad or self._held_requires_grad()))
                    and self._parameters["weight"].data_ptr() == f.w and (not f.vchk or _same_ptrs(f.vchk))
                    and (f.wver is None or _weight_version(self._parameters["weight"]) == f.wver)
                    and hit[0]._handle is not None):
                # Everything the checks looked at is as it was at the checked call that made f:
                # only x's and y's addresses go on (the library checks their alignment).
                y = x.new_empty(hit[1])
                st = f.launch(hit[2], x.data_ptr(), f.w, y.data_ptr(), f.vecs, f.scalars, _raw_stream(f.index))
                if st:
                    self._launch_failed(hit[0], st)
                return y
        return self._forward_checked(x, params)

    def weight_changed(self):
        """Says that the weight's memory holds new contents where torch's version counter cannot
        tell (an inference tensor, a write through .data): a pre-split 3xtf32 plan splits it again
        at its next call (Plan.weight_changed). Nothing for other plans."""
        for plan in list(self._plans.values()):
            if getattr(plan, "presplit", False):
                plan.weight_changed()
                plan.weight_seen = None
        self.__dict__["_fast"] = None
        _native.clear(self.op_handle)  # its next call of each M comes through _note_weight

    def _note_weight(self, plan, w):
        """Before a launch of plan: a pre-split plan (3xtf32, "presplit") keeps W split while its
        address stays, so when w changed (address or torch's version counter) since the plan last
        saw it, the plan and every other pre-split plan of the layer that saw the old one (each M
        has its own) are told."""
        if not plan.presplit:
            return
        seen = (w.data_ptr(), _weight_version(w))
        if plan.weight_seen is not None and plan.weight_seen != seen:
            for other in list(self._plans.values()):
                if getattr(other, "presplit", False) and (other is plan or other.weight_seen is not None):
                    other.weight_changed()
                    other.weight_seen = None
        plan.weight_seen = seen

    def _held(self):
        """The weight and each vector the layer holds (the bias, buffers), by slot."""
        p, b = self._parameters, self._buffers
        return [p.get("weight")] + [p.get(n, b.get(n)) for n in self._vec_names]

    def _held_requires_grad(self):
        return any(t.requires_grad for t in self._held())

    def _forward_checked(self, x, params):
        """forward() with every check."""
        grad = _grad_enabled()
        if not isinstance(x, torch.Tensor):
            raise InvalidArgumentError(f"x must be a tensor, not {type(x).__name__}")
        if x.is_meta or (x.__class__ is not _Tensor and _traced(x)):
            # the op's meta implementation (shape and dtype), or the op itself into a graph that
            # make_fx / AOTAutograd trace with fake tensors (Inductor's compile_fx, fusedtune.torch.backend)
            return self._forward_op(x, params)
        w, dev = self.weight, self.weight.device
        check_no_grad("x", x, grad)
        check_no_grad("weight", w, grad)
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            raise InvalidArgumentError(f"x has shape {list(x.shape)}, expected [..., {self.in_features}] "
                                       f"(in_features)")
        mode = self._mode()
        check_tensor("weight", w, dtype=mode.dtype, device=None, shape=(self._w_rows, self.in_features))
        lead = tuple(x.shape[:-1])
        m = _math.prod(lead)
        check_tensor("x", x, dtype=mode.dtype, device=dev, shape=tuple(x.shape))
        vecs, scalars = self._binding.bind(m, self.out_features, lambda name: getattr(self, name), params,
                                           dtype=mode.dtype, device=dev, grad_enabled=grad, lead=lead)
        y = torch.empty(lead + self._y_tail, dtype=w.dtype, device=dev)
        if m == 0:
            return y
        plan = self.plan_for(m, dev)
        self._note_weight(plan, w)
        va, sa = self._slot_arrays({k: t.data_ptr() for k, t in vecs.items()}, scalars)
        launch = _launch.launcher(plan.db._lock)
        current = dev.index == _current_device()
        self._launch(launch, plan, x.data_ptr(), w.data_ptr(), y.data_ptr(), va, sa, dev, current)
        if not params and current:  # launched: the next such call may skip the checks
            self._keep_fast(x, plan, launch, w.data_ptr(), va, sa, grad)
        return y

    def _slot_arrays(self, vec_ptrs, scalars):
        """ft_plan_launch_ptrs's arrays (fusedtune.plan.slot_arrays) from {name: pointer} and {name: value}
        (a scalar not given: its default)."""
        return slot_arrays(self._slots, [vec_ptrs[n] for n, kind, _ in self._slots if kind != "scalar"],
                                [scalars.get(n) for n, kind, _ in self._slots if kind == "scalar"])

    def _launch(self, launch, plan, x_ptr, w_ptr, y_ptr, va, sa, dev, current):
        """Launches on dev's current stream (current: dev is the current device)."""
        args = (plan._handle.value, x_ptr, w_ptr, y_ptr, ctypes.addressof(va), ctypes.addressof(sa))
        if current:
            st = launch(*args, _raw_stream(dev.index))
        else:
            with torch.cuda.device(dev):
                st = launch(*args, _raw_stream(dev.index))
        if st:
            self._launch_failed(plan, st)

    def _launch_failed(self, plan, status):
        msg = core._s(lib().ft_errmsg(plan.db._ctx)).replace("ft_plan_launch_ptrs: w ", "weight ")
        raise error_for(status, "FusedLinear: " + msg.replace("ft_plan_launch_ptrs: ", ""))

    def _keep_fast(self, x, plan, launch, w_ptr, va, sa, grad):
        """Records a checked call's launch for forward's fast path: per input shape its plan
        and output shape, for as long as the rest (_FastState) stays as it was."""
        held, f, index = self._held(), self._fast, x.get_device()
        if any(not isinstance(t, torch.Tensor) for t in held):
            self._fast = None
            return
        p = self._parameters
        vchk = tuple((p if n in p else self._buffers, n, t.data_ptr()) for n, t in zip(self._vec_names, held[1:]))
        # A weight changed in place drops every shape recorded before (a pre-split plan of another M
        # must see the change on its own checked call).
        if (f is None or f.w != w_ptr or f.vchk != vchk or f.dtype is not x.dtype or f.index != index
                or f.grad is not grad or f.launch is not launch
                or (f.wver is not None and f.wver != _weight_version(held[0]))):
            f = _FastState(x.dtype, index, grad, launch, w_ptr, vchk, va, sa)
        if plan.presplit:  # its weight's version too: a change in place goes through the checked path
            f.wver = _weight_version(held[0])
        f.shapes[x.shape] = (plan, tuple(x.shape[:-1]) + self._y_tail, plan._handle.value)
        self._fast = f

    def _forward_op(self, x, params):
        """forward() as a call of the torch op fusedtune::linear, in steps Dynamo traces into one
        graph (no data pointers, no ctypes): the op checks its tensors when it runs."""
        grad = torch.is_grad_enabled()
        operands, scalars, names = [], [], []
        for name, kind, default in self._slots:
            if kind == "scalar":
                v = params[name] if name in params else self._binding.scalars.get(name, default)
                if v is None:
                    _op_fail(f"scalar {name} has no default in the epilogue and no value: give it in params= or as "
                             f"forward({name}=...)")
                scalars.append(float(v))
            elif name in params:
                operands.append(params[name])
            elif name == "bias" or name in self._binding.buffers:
                operands.append(getattr(self, name))
            elif kind == "mat":
                _op_fail(f"matrix {name} has no value: give it as forward({name}=...)")
            else:
                _op_fail(f"{kind} vector {name} has no value: give it in params= or as forward({name}=...)")
        for name, t in [("x", x), ("weight", self.weight)] + list(zip(self._vec_names, operands)):
            if not isinstance(t, torch.Tensor):
                _op_fail(f"{name} must be a tensor, not {type(t).__name__}")
            if grad and t.requires_grad:
                _op_fail(f"{name} requires grad, but FusedLinear is inference-only (no backward): run it under "
                         f"torch.no_grad() or torch.inference_mode(), or pass {name}.detach()")
        return (torch_op.linear if _compiling() else _op_call)(x, self.weight, operands, scalars, self.op_handle)

    def _run_op(self, x, weight, operands, scalars):
        """fusedtune::linear's CUDA implementation for this layer: every check forward's checked
        path makes, then the launch of the plan of x's M on the current stream."""
        grad = torch.is_grad_enabled()
        check_no_grad("x", x, grad)
        check_no_grad("weight", weight, grad)
        n, k = self.out_features, self.in_features
        if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[-1] != k:
            raise InvalidArgumentError(f"x has shape {list(x.shape)}, expected [..., {k}] (in_features)")
        mode = self._mode()
        check_tensor("weight", weight, dtype=mode.dtype, device=None, shape=(self._w_rows, k))
        dev = weight.device
        check_tensor("x", x, dtype=mode.dtype, device=dev, shape=(*x.shape[:-1], k))
        lead = tuple(x.shape[:-1])
        m = _math.prod(lead)
        vec_slots = [(name, kind) for name, kind, _ in self._slots if kind != "scalar"]
        n_scalars = len(self._slots) - len(vec_slots)
        if len(operands) != len(vec_slots) or len(scalars) != n_scalars:
            raise InvalidArgumentError(f"fusedtune::linear: {len(operands)} operands and {len(scalars)} scalars for "
                                       f"epilogue '{self.epilogue.canonical}', which takes {len(vec_slots)} and "
                                       f"{n_scalars} (in slot order: {', '.join(s[0] for s in self._slots)})")
        for (name, kind), t in zip(vec_slots, operands):
            if kind == "mat":
                check_tensor(name, t, dtype=mode.dtype, device=dev, shape=lead + (n,),
                             hint=" (a matrix: the GEMM result's shape, [..., out_features])")
            else:
                hint = " (a col vector: out_features long)" if kind == "col" else " (a row vector: one per input row)"
                check_tensor(name, t, dtype=mode.dtype, device=dev, shape=(n if kind == "col" else m,), hint=hint)
            check_no_grad(name, t, grad)
        y = x.new_empty(lead + self._y_tail)
        if m == 0:
            return y
        plan = self.plan_for(m, dev)
        self._note_weight(plan, weight)
        # The C++ implementation serves the next calls of this M (a pre-split plan while the weight
        # stays as it saw it here).
        for _ in range(2):  # a layer made while the C++ implementation was off: described now
            if _native.plan(self.op_handle, dev.index, m, _native.FT_DTYPES[mode.dtype], plan, w_seen=plan.weight_seen):
                break
            self._describe_op()
        key = (tuple(t.data_ptr() for t in operands), tuple(scalars))
        arrays = self._op_args.get(key)
        if arrays is None:
            if len(self._op_args) >= 64:  # row vectors new on every call: keep the table small
                self._op_args.clear()
            names = iter(scalars)
            arrays = self._op_args[key] = self._slot_arrays(
                {name: t.data_ptr() for (name, _), t in zip(vec_slots, operands)},
                {name: next(names) for name, kind, _ in self._slots if kind == "scalar"})
        self._launch(_launch.launcher(plan.db._lock), plan, x.data_ptr(), weight.data_ptr(), y.data_ptr(),
                     *arrays, dev, dev.index == _current_device())
        return y


def _no_output_form(output):
    """Outside fp8 a layer's y is its mode's tensor: output= (bf16, or e4m3 codes and row scales) is
    FP8Linear's (math="fp8")."""
    if output is not None:
        raise InvalidArgumentError(f"output {output!r}: only fp8 layers (math='fp8') take output= ('bf16', or "
                                   f"'e4m3': y's codes and row scales); other modes return y in their own dtype")


def _check_gated_biases(where, gate, up, params):
    """A gated pair's biases are not taken from its layers (E names them, params gives them): layers
    with a bias and no vector in params are refused, in one line, rather than served without it."""
    if (gate.bias is not None or up.bias is not None) and not any(
            isinstance(v, torch.Tensor) and v.dim() > 0 for v in (params or {}).values()):
        raise InvalidArgumentError(f"{where}: gate or up has a bias, which E must name and params give: E = \"silu(x + "
                                   f"b1) * (x2 + b2) where col b1, col b2\" with params={{\"b1\": gate.bias, \"b2\": "
                                   f"up.bias}}")


def interleave_gated(w1, w2):
    """One [2N, K] weight from a gated pair's two [N, K] weights (gate and up), as fusedtune's gated
    kernels read it: rows 16j .. 16j + 7 are w1's 8j .. 8j + 7, rows 16j + 8 .. 16j + 15 w2's
    (docs/EPILOGUE.md, "Gated pairs"; the C library's ft_gated_interleave). A new tensor on w1's
    device; N must be a multiple of 8."""
    for name, w in (("w1", w1), ("w2", w2)):
        if not isinstance(w, torch.Tensor) or w.dim() != 2:
            raise InvalidArgumentError(f"interleave_gated: {name} must be a 2-D tensor [N, K]")
    if w1.shape != w2.shape or w1.dtype != w2.dtype or w1.device != w2.device:
        raise InvalidArgumentError(f"interleave_gated: w1 {list(w1.shape)} {w1.dtype} on {w1.device} and w2 "
                                   f"{list(w2.shape)} {w2.dtype} on {w2.device} must match")
    n, k = w1.shape
    if n % 8 or n == 0:
        raise InvalidArgumentError(f"interleave_gated: N = {n} must be a positive multiple of 8 (the rows alternate "
                                   f"in groups of 8)")
    return torch.stack((w1.reshape(n // 8, 8, k), w2.reshape(n // 8, 8, k)), dim=1).reshape(2 * n, k).contiguous()


def _traced(x):
    """Whether x is a fake tensor of a trace (FakeTensor, or a functional tensor over one)."""
    from torch._guards import detect_fake_mode
    return detect_fake_mode([x]) is not None


def _op_fail(message):
    """Raises InvalidArgumentError(message) from the traced forward: outside Dynamo's trace, which
    cannot build the exception (with fullgraph=True Dynamo reports the call instead; without it
    the call runs eagerly and raises this)."""
    raise InvalidArgumentError(message)


if hasattr(getattr(torch, "compiler", None), "disable"):
    _op_fail = torch.compiler.disable(_op_fail)


def _same_ptrs(checks):
    """Each (dict, name, address) of checks: the tensor dict[name] is still at that address."""
    for d, name, ptr in checks:
        if d[name].data_ptr() != ptr:
            return False
    return True


def _weight_version(w):
    """torch's version counter of w; None for an inference tensor, which keeps none."""
    return None if w.is_inference() else w._version


class _FastState:
    """What forward's fast path compares a call with: x's dtype, the device (also the current
    one), grad mode, and the addresses of the layer's weight and vectors (vchk: (dict, name,
    address) each), as at the checked call that recorded it (a new weight, bias, buffer or mode
    set on the layer drops the state: FusedLinear.__setattr__); per input shape, the plan and the
    output shape; and the launch's prepared arguments (the slot arrays)."""
    __slots__ = ("shapes", "dtype", "index", "grad", "launch", "w", "vchk", "vecs", "scalars", "keep", "wver")

    def __init__(self, dtype, index, grad, launch, w, vchk, va, sa):
        self.shapes, self.wver = {}, None
        self.dtype, self.index, self.grad, self.launch, self.w, self.vchk = dtype, index, grad, launch, w, vchk
        self.vecs, self.scalars, self.keep = ctypes.addressof(va), ctypes.addressof(sa), (va, sa)


__all__ = ["FusedLinear", "NearestShapeWarning", "interleave_gated"]
