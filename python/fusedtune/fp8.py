"""The fp8 (e4m3) mode from PyTorch: the library's quantizer, launches that say each tensor's
element type (ft_plan_launch_typed), and FP8Linear, a bf16 nn.Linear run in fp8 with its
epilogue and scales fused: W quantized per output channel once, x per token on every call,
y = E(x W^T) in bf16 with E applied to the dequantized fp32 accumulator. Made by
FusedLinear.from_linear(lin, E, math="fp8"), FusedLinear.from_fp8(weight, weight_scale, bias, E), or
for a gated pair FusedLinear.from_gated(gate, up, E, math="fp8") (each weight quantized per channel on
its own, sw and sw2, the codes interleaved). With output="e4m3" a layer returns E4M3Rows (y's e4m3
codes and a scale per row, quantized as x is), which a next FP8Linear takes as its x without
quantizing it again."""
from typing import NamedTuple
import ctypes
import math as _math

from . import _lib

torch = _lib.import_torch("fusedtune.fp8")
nn = torch.nn

from . import _launch, core  # noqa: E402 (after torch, whose absence is said first)
from ._binding import Binding, check_no_grad, check_tensor, device_str, dtype_name
from ._lib import lib
from .errors import InvalidArgumentError, NotFoundError

_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
from .torch import _native  # noqa: E402
from .torch.op import PreparedArgs as _PreparedArgs, _call as _op_call  # noqa: E402
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
_TORCH_DTYPES = {_lib.FT_DTYPE_F32: torch.float32, _lib.FT_DTYPE_BF16: torch.bfloat16,
                 _lib.FT_DTYPE_F16: torch.float16, _lib.FT_DTYPE_E4M3: torch.float8_e4m3fn}
_FT_DTYPES = {v: k for k, v in _TORCH_DTYPES.items()}


class E4M3Rows(NamedTuple):
    """A bf16 activation quantized per row (per token): codes float8_e4m3fn [..., K], contiguous,
    and scales fp32 [rows] (rows: the product of the leading dimensions), codes * scales[:, None] ~
    the values. What an FP8Linear with output="e4m3" returns and what FP8Linear takes as x in
    place of bf16 (its quantizer then does not run); Quantizer.quantize(t) makes one of a 2-D t."""
    codes: object
    scales: object

    def dequantize(self):
        """The bf16 values codes * scales (for checks; a layer never needs them)."""
        return (self.codes.float() * self.scales.reshape(tuple(self.codes.shape[:-1]) + (1,))).to(torch.bfloat16)


def fp8_epilogue(epilogue):
    """The fp8 problem's epilogue of a bf16 layer's E: x * sx * sw in place of x, with row sx
    (per token) and col sw (per output channel) declared, and a gated pair's x2 * sx * sw2 with col
    sw2 (its weight's own scales); matrix operands stay, bf16 (ft_fp8_epilogue)."""
    out = ctypes.create_string_buffer(8192)
    st = lib().ft_fp8_epilogue(core._cstr("epilogue", epilogue), out, len(out))
    if st != 0:
        core._raise(st, f"fp8: no fp8 form of the epilogue {epilogue!r} (it must parse, not name sx, sw or sw2, use x "
                    "(and x2) once, and not reduce)")
    return core._s(out.value)


def _stream(dev):
    return _raw_stream(dev.index) if _raw_stream else torch.cuda.current_stream(dev).cuda_stream


class Quantizer:
    """ft_quantizer of a Database (its device): quantize(t, per_row) -> (e4m3 codes, fp32 scales)."""

    def __init__(self, db):
        self.db, self._q = db, ctypes.c_void_p()
        self._call = _launch.quantizer_call(db._lock)
        with db._lock:
            db._check(lib().ft_quantizer_create(db._handle(), ctypes.byref(self._q)))

    def quantize(self, t, per_row=True, out=None, scales=None):
        """t [rows, cols] bf16/fp16/fp32 CUDA, contiguous: codes (float8_e4m3fn) and scales
        (rows, or one, fp32) with code * scale ~ t; into out / scales where given. Per row, an
        E4M3Rows (an FP8Linear's x as it is)."""
        if t.dim() != 2 or not t.is_cuda or not t.is_contiguous() or t.dtype not in _FT_DTYPES:
            raise InvalidArgumentError("quantize takes a contiguous 2-D bf16, fp16 or fp32 CUDA tensor")
        rows, cols = t.shape
        # The library writes rows x cols codes and the scales through these pointers: check them.
        if out is not None:
            check_tensor("out", out, dtype="float8_e4m3fn", device=t.device, shape=(rows, cols))
        if scales is not None:
            check_tensor("scales", scales, dtype="float32", device=t.device, shape=(rows if per_row else 1,))
        out = torch.empty((rows, cols), dtype=torch.float8_e4m3fn, device=t.device) if out is None else out
        scales = torch.empty(rows if per_row else 1, dtype=torch.float32, device=t.device) if scales is None else scales
        self._run(t.data_ptr(), _FT_DTYPES[t.dtype], rows, cols, per_row, out.data_ptr(), scales.data_ptr(),
                  _stream(t.device))
        return E4M3Rows(out, scales) if per_row else (out, scales)

    def _run(self, src, dtype, rows, cols, per_row, out, scales, stream):
        """ft_quantize_e4m3 on addresses its caller checked (the compiled path where built)."""
        if not self._q.value:
            raise InvalidArgumentError("the quantizer was closed")
        st = self._call(self._q.value, src, dtype, rows, cols, _lib.FT_SCALE_ROW if per_row else _lib.FT_SCALE_TENSOR,
                        out, scales, stream or 0)
        if st:
            with self.db._lock:
                self.db._check(st)

    def close(self):
        if self._q.value:
            if getattr(self, "_forget_hook", None) is not None:  # fusedtune.torch's C++ op lets go first
                self._forget_hook(self._q.value)
            lib().ft_quantizer_destroy(self._q)
        self._q = ctypes.c_void_p()


def _tensor_arg(name, t):
    return _lib.ft_tensor_arg(name, t.data_ptr(), _FT_DTYPES[t.dtype])


def launch_typed(plan, x, w, y, vecs, scalars=None, stream=0):
    """plan on tensors with their element types: x, w, y and vecs {name: tensor}; scalars {name: float}."""
    names = [core._cstr("argument name", n) for n in list(vecs) + list(scalars or {})]
    a = _lib.ft_typed_args()
    a.struct_size = ctypes.sizeof(_lib.ft_typed_args)
    a.x, a.w, a.y = _tensor_arg(None, x), _tensor_arg(None, w), _tensor_arg(None, y)
    va = (_lib.ft_tensor_arg * max(1, len(vecs)))(*[_tensor_arg(nm, t) for nm, t in zip(names, vecs.values())])
    sa = (_lib.ft_scalar_arg * max(1, len(scalars or {})))(
        *[_lib.ft_scalar_arg(nm, float(v)) for nm, v in zip(names[len(vecs):], (scalars or {}).values())])
    a.vecs, a.n_vecs = ctypes.cast(va, ctypes.POINTER(_lib.ft_tensor_arg)), len(vecs)
    a.scalars, a.n_scalars = ctypes.cast(sa, ctypes.POINTER(_lib.ft_scalar_arg)), len(scalars or {})
    with plan.db._lock:
        if plan._handle is None:
            raise InvalidArgumentError("the plan was destroyed")
        plan.db._check(lib().ft_plan_launch_typed(plan._handle, ctypes.byref(a), stream or None))


class _Launch:
    """A plan's ft_typed_args built once (names, element types, the arrays): each call sets the
    addresses (x's codes, W, y, sx, sw, then the epilogue's other vectors: the bias and any the
    layer was given) and the scalars' values, and launches. vectors: ((name, FT_DTYPE_*), ...)
    after sx and sw; scalars: the names of the scalars passed."""

    def __init__(self, plan, vectors=(), scalars=(), quantizer=None):
        names = [("sx", _lib.FT_DTYPE_F32), ("sw", _lib.FT_DTYPE_F32)] + list(vectors)
        self.plan = plan
        self._names = [core._cstr("argument name", n) for n, _ in names]
        self._scalar_names = [core._cstr("argument name", n) for n in scalars]
        a = self._args = _lib.ft_typed_args()
        a.struct_size = ctypes.sizeof(_lib.ft_typed_args)
        a.x = _lib.ft_tensor_arg(None, None, _lib.FT_DTYPE_E4M3)
        a.w = _lib.ft_tensor_arg(None, None, _lib.FT_DTYPE_E4M3)
        # An e4m3 y (quantizer given): E's result in bf16 into y_work, then its codes and row scales.
        a.y = _lib.ft_tensor_arg(None, None, _lib.FT_DTYPE_E4M3 if quantizer is not None else _lib.FT_DTYPE_BF16)
        a.quantizer = quantizer._q.value if quantizer is not None else None
        self._vecs = (_lib.ft_tensor_arg * len(names))(*[_lib.ft_tensor_arg(c, None, d)
                                                          for c, (_, d) in zip(self._names, names)])
        a.vecs, a.n_vecs = ctypes.cast(self._vecs, ctypes.POINTER(_lib.ft_tensor_arg)), len(names)
        self._scalars = (_lib.ft_scalar_arg * max(1, len(scalars)))(*[_lib.ft_scalar_arg(c, 0.0)
                                                                     for c in self._scalar_names])
        a.scalars = ctypes.cast(self._scalars, ctypes.POINTER(_lib.ft_scalar_arg)) if scalars else None
        a.n_scalars = len(scalars)
        self._addr = ctypes.addressof(a)
        self._launch = _launch.typed_launcher(plan.db._lock)

    def __call__(self, x, w, y, sx, sw, vectors=(), scalars=(), stream=0, y_work=None, y_scales=None):
        """vectors: the addresses of the vectors after sx and sw, in __init__'s order; scalars: the
        values, in its order; y_work and y_scales: an e4m3 y's (bf16 [M, N] and fp32 [M])."""
        a, plan = self._args, self.plan
        a.x.data, a.w.data, a.y.data = x, w, y
        a.y_work, a.y_scales = y_work, y_scales
        for i, ptr in enumerate((sx, sw) + tuple(vectors)):
            self._vecs[i].data = ptr
        for i, v in enumerate(scalars):
            self._scalars[i].value = v
        handle = plan._handle
        if handle is None:
            raise InvalidArgumentError("the plan was destroyed")
        st = self._launch(handle.value, self._addr, stream or 0)
        if st:
            with plan.db._lock:
                plan.db._check(st)


def _check_output(output):
    if output not in ("bf16", "e4m3"):
        raise InvalidArgumentError(f"fp8 output {output!r}: 'bf16' (y) or 'e4m3' (y's codes and row scales, "
                                   f"E4M3Rows)")


def _bf16_operands(epilogue):
    """The operands an fp8 plan reads as bf16 (ft_vec_dtype): the bias and every matrix (a residual,
    of y's kind); every other vector (the scales, the epilogue's own) is fp32."""
    return frozenset(["bias"] + [p.name for p in epilogue.params if p.kind == "mat"])


def _bf16_weights(where, layers):
    """The weights of layers ({name: nn.Linear}) for the quantizer, detached and contiguous, each
    checked first (one line naming it): bf16 on a CUDA device, 2-D, all of the first's shape and on
    its device (the quantizer runs there and reads every weight's memory)."""
    ws = {name: lin.weight.detach() for name, lin in layers.items()}
    (first_name, first), *_ = ws.items()
    for name, w in ws.items():
        if dtype_name(w) != "bfloat16" or w.device.type != "cuda":
            raise InvalidArgumentError(f"{where} takes {'a bf16 CUDA layer' if len(ws) == 1 else 'bf16 CUDA layers'} "
                                       f"({name}.weight is {dtype_name(w)} on {device_str(w)})")
        if len(w.shape) != 2 or tuple(w.shape) != tuple(first.shape):
            raise InvalidArgumentError(f"{where}: {name}.weight has shape {list(w.shape)} and {first_name}.weight "
                                       f"{list(first.shape)}: a gated pair's two weights are [N, K] each")
        if w.device.index != first.device.index:
            raise InvalidArgumentError(f"{where}: {name}.weight is on {device_str(w)} and {first_name}.weight on "
                                       f"{device_str(first)}: both must be on one device (its quantizer reads them)")
    return [w.contiguous() for w in ws.values()]


def _quantize_weights(db, weights):
    """[(codes, per-channel scales)] of bf16 contiguous CUDA weights on one device (_bf16_weights),
    one quantizer for them all."""
    with torch.cuda.device(weights[0].device):
        quantizer = Quantizer(db)
        try:
            return [quantizer.quantize(w, per_row=True) for w in weights]  # per output channel, once
        finally:
            quantizer.close()


def _check_layer(weight, weight_scale, bias, epilogue, weight_scale2=None):
    """FP8Linear's checks of its tensors and epilogue, before anything is held or opened (one line
    each): returns (N, K, the fp8 problem's Epilogue). A gated pair is a layer with
    weight_scale2; its weight has 2N rows."""
    if dtype_name(weight) != "float8_e4m3fn" or len(weight.shape) != 2:
        raise InvalidArgumentError(f"fp8 weight must be a 2-D float8_e4m3fn tensor, not {dtype_name(weight)} of shape "
                                   f"{list(weight.shape)}")
    rows, k = weight.shape
    gated = weight_scale2 is not None
    n = rows // 2 if gated else rows  # a gated pair's weight: two rows per output column
    if weight_scale is None:
        raise InvalidArgumentError(f"fp8 weight_scale is None: the layer dequantizes with its weight's fp32 "
                                   f"per-channel scales, [{n}] (FusedLinear.from_linear(lin, E, math='fp8') makes "
                                   f"them)")
    if gated and (rows % 16 or rows == 0):
        raise InvalidArgumentError(f"fp8 gated weight has {rows} rows: the interleaved [2N, K] of two [N, K] "
                                   f"weights, N a positive multiple of 8 (interleave_gated)")
    check_tensor("weight", weight, dtype="float8_e4m3fn", device=None, shape=(rows, k))
    for name, t in (("weight_scale", weight_scale), ("weight_scale2", weight_scale2)):
        if t is not None:
            check_tensor(name, t, dtype="float32", device=weight.device, shape=(n,),
                         hint=" (one fp32 scale per output channel)")
    if bias is not None:
        check_tensor("bias", bias, dtype="bfloat16", device=weight.device, shape=(n,))
    text = epilogue if epilogue is not None else ("x + bias" if bias is not None else "none")
    ep = core.inspect_epilogue(fp8_epilogue(text))
    if ep.uses_x2 != gated:
        raise InvalidArgumentError(
            f"fp8: epilogue '{text}' {'uses' if ep.uses_x2 else 'does not use'} x2, and the layer has "
            f"{'two weights (weight_scale2)' if gated else 'one weight'}: FusedLinear.from_gated(gate, up, E, "
            f"math='fp8') makes a gated pair's layer")
    return n, k, ep


class FP8Linear(_PreparedArgs, nn.Module):
    """A bf16 linear layer y = E(x W^T) run in fp8 (see the module's text). weight e4m3 [N, K],
    weight_scale fp32 [N] (required), bias bf16 [N] or None; epilogue is the bf16 layer's E (not
    yet scaled: the fp8 problem's epilogue is fp8_epilogue(E), and an E that already names sx, sw
    or sw2 is a ParseError). A gated pair (E with x2): weight the interleaved [2N, K] codes of the
    two weights (interleave_gated), weight_scale the first's per-channel scales (sw) and
    weight_scale2 the second's (sw2), both [N]. A matrix operand (a residual) is bf16, shaped like
    the output. E's other parameters as FusedLinear's: params {name: value} at construction (a col
    vector: [N] CUDA, read as fp32: one of another floating dtype, a bf16 bias b1 of a gated pair
    say, is held as an fp32 copy; a scalar: a number), or per call as forward(x, name=...) (a row
    vector: fp32 [M]). Inference only; CUDA tensors; N and K multiples of 16. x is bf16 [..., K], or
    E4M3Rows (codes [..., K] and their per-row scales: a previous layer's e4m3 output), taken as the
    quantizer would have made it. output "bf16" (y bf16 [..., N]) or "e4m3": y quantized per row for
    a next fp8 layer, returned as E4M3Rows (E's result is computed in bf16 first, then quantized by a
    second kernel: a row's scale needs the whole row, which spans many tiles)."""

    output = "bf16"  # y's form: "bf16", or "e4m3" (E4M3Rows); set by __init__

    def __init__(self, weight, weight_scale, bias, epilogue, db, params=None, weight_scale2=None, output="bf16"):
        super().__init__()
        _check_output(output)
        self.output = output
        n, k, self.epilogue = _check_layer(weight, weight_scale, bias, epilogue, weight_scale2)
        self.out_features, self.in_features = n, k
        self.register_buffer("weight", weight)
        self.register_buffer("weight_scale", weight_scale)
        self.register_buffer("weight_scale2", weight_scale2)
        self.register_buffer("bias", bias)
        self.math = "fp8"
        self._own = ("sx", "sw", "sw2") if weight_scale2 is not None else ("sx", "sw")
        self._bf16 = _bf16_operands(self.epilogue)
        # E's own parameters: sx and sw are the layer's (bound on every call), the rest as
        # FusedLinear binds them (a vector given here is held as a buffer, in fp32: every vector of
        # params is read as fp32, the bias and matrices alone as bf16).
        scalars, vectors = {}, {}
        for name, v in (params or {}).items():
            if isinstance(v, torch.Tensor) and v.dim() > 0:
                vectors[name] = v.float() if v.is_floating_point() and name not in self._bf16 else v
            else:
                scalars[name] = v
        self._binding = Binding(self.epilogue, bias is not None, scalars, tuple(vectors), own=self._own)
        for name, t in vectors.items():
            if name in ("weight", "weight_scale", "weight_scale2") or hasattr(self, name):
                raise InvalidArgumentError(f"epilogue vector {name!r} would hide the module's attribute of that "
                                           f"name: rename it in the expression")
            self.register_buffer(name, t)
        self._db = db if isinstance(db, core.Database) else core.Database(db, readonly=True)
        self._quantizer, self._plans, self._launches = None, {}, {}
        self._bound = None  # the last call's binding without arguments: reused while its tensors are the layer's
        self._y_tail = (n,)
        # The operator fusedtune::linear's view of the layer: its operands are the vectors of E's
        # slots but sx (which the call makes), in slot order.
        self._op_slots = tuple((p.name, p.kind, p.default) for p in self.epilogue.params)
        self._native_args = None
        self._register_op()

    def _register_op(self):
        from .torch import op as torch_op
        self.op_handle = torch_op.register(self)
        self._describe_op()

    def _describe_op(self):
        ft = _native.FT_DTYPES
        _native.layer(self.op_handle, typed=True, n=self.out_features, k=self.in_features,
                      w_rows=self._buffers["weight"].shape[0], w_dtypes=[ft["float8_e4m3fn"]], x_dtype=ft["bfloat16"],
                      y_tail=self._y_tail,
                      slots=[(name, "own" if name == "sx" else kind, ft[self._vector_dtype(name)] if kind != "scalar"
                              else -1) for name, kind, _ in self._op_slots])

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_quantizer"], state["_plans"], state["_launches"], state["_bound"] = None, {}, {}, None
        state["_native_args"] = None
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._register_op()

    def __setattr__(self, name, value):
        if name == "output":
            _check_output(value)
        super().__setattr__(name, value)  # a new buffer: the operator's prepared arguments no longer hold
        if name != "_native_args":
            self.__dict__["_native_args"] = None

    def _op_operands(self, params):
        """(operands, scalars) of fusedtune::linear for a call with forward()'s params: the layer's
        buffers (sw, sw2, the bias, vectors given at construction) and params; None when a slot has
        no value (the checked path names it)."""
        buf, operands, scalars, keys = self._buffers, [], [], []
        own = {"sw": "weight_scale", "sw2": "weight_scale2"}
        for name, kind, default in self._op_slots:
            if name == "sx":
                continue
            if kind == "scalar":
                v = params[name] if name in params else self._binding.scalars.get(name, default)
                if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
                    return None
                scalars.append(float(v))
                continue
            t = params.get(name, buf.get(own.get(name, name)))
            if not isinstance(t, torch.Tensor):
                return None
            operands.append(t)
            keys.append(None if name in params else own.get(name, name))
        return operands, scalars, keys

    @classmethod
    def from_linear(cls, linear, epilogue=None, db=None, params=None, output="bf16"):
        w, = _bf16_weights("fp8 from_linear", {"linear": linear})
        db = db if isinstance(db, core.Database) else core.Database(db, readonly=True)
        q, sw = _quantize_weights(db, [w])[0]
        bias = linear.bias.detach() if linear.bias is not None else None
        return cls(q, sw, bias, epilogue, db, params, output=output)

    @classmethod
    def from_gated(cls, gate, up, epilogue="silu(x) * x2", db=None, params=None, output="bf16"):
        """A gated pair's fp8 layer from two bf16 CUDA nn.Linear of one shape on one device: each
        weight quantized per output channel on its own (sw: gate's scales, sw2: up's), the codes
        interleaved (interleave_gated) once. Biases are not taken from the layers: name them in E
        as col vectors and pass them in params (E = "silu(x + b1) * (x2 + b2) where col b1, col
        b2", params={"b1": gate.bias, "b2": up.bias}; held as fp32 copies); layers with a bias and
        no vector in params are refused."""
        from .torch.layer import _check_gated_biases, interleave_gated
        _check_gated_biases("fp8 from_gated", gate, up, params)
        ws = _bf16_weights("fp8 from_gated", {"gate": gate, "up": up})
        db = db if isinstance(db, core.Database) else core.Database(db, readonly=True)
        (q1, sw), (q2, sw2) = _quantize_weights(db, ws)
        # e4m3 rows moved as bytes: the interleave is a copy of whole rows.
        codes = interleave_gated(q1.view(torch.uint8), q2.view(torch.uint8)).view(torch.float8_e4m3fn)
        return cls(codes, sw, None, epilogue, db, params, weight_scale2=sw2, output=output)

    def _vector_dtype(self, name):
        """The element type this layer's plan reads for the operand name (ft_vec_dtype)."""
        return "bfloat16" if name in self._bf16 else "float32"

    def plan_for(self, m):
        plan = self._plans.get(m)
        if plan is None:
            problem = core.Problem(m, self.out_features, self.in_features, self.epilogue.canonical, "fp8")
            try:
                config = self._db.lookup(problem)
            except NotFoundError as e:
                raise self._db.not_tuned(problem, str(e)) from None
            plan = self._plans[m] = self._db.plan(problem, config)
        return plan

    def forward(self, x, **params):
        """y = E(x W^T) for bf16 x [..., K] or E4M3Rows; params: E's vectors and scalars for this call
        (those not given at construction, or to override them). y bf16 [..., N], or E4M3Rows with
        output "e4m3"."""
        if (_native._C is not None and x.__class__ is torch.Tensor  # the operator's C++ implementation
                and self.output == "bf16"
                and all(self.epilogue.param(name) is not None and name not in self._own and name != "bias"
                        for name in params)):
            buf = self._buffers
            a = self._native_args if not params else None
            # The held buffers still the module's (functional_call and direct writes bypass __setattr__).
            if a is None or not all(buf.get(key) is t for key, t in zip(a[2], a[0])):
                a = self._op_operands(params)
                if not params:
                    self.__dict__["_native_args"] = a
            w = buf.get("weight")
            if a is not None and w is not None:
                return _op_call(x, w, a[0], a[1], self.op_handle)
        grad = torch.is_grad_enabled()
        check_no_grad("x", x, grad)
        buf = self._buffers  # read once: nn.Module's attribute lookup of a buffer is slow
        w = buf["weight"]
        dev = w.device
        xt = x.codes if isinstance(x, E4M3Rows) else x
        check_tensor("x.codes" if xt is not x else "x", xt, dtype="float8_e4m3fn" if xt is not x else "bfloat16",
                     device=dev, shape=tuple(xt.shape[:-1]) + (self.in_features,))
        lead = tuple(xt.shape[:-1])
        m = _math.prod(lead)
        if xt is not x:
            check_tensor("x.scales", x.scales, dtype="float32", device=dev, shape=(m,),
                         hint=" (one fp32 scale per row of x.codes)")
        bound = self._bound
        if not params and bound is not None and all(buf.get(n) is t for n, t in bound[0].items()):
            vecs, scalars = bound  # the same buffers as when they were checked: no check per call
        else:
            vecs, scalars = self._binding.bind(m, self.out_features, buf.get, params, dtype=self._vector_dtype,
                                               device=dev, grad_enabled=grad, lead=lead)
            if not params:
                self._bound = (vecs, scalars)
        if self.output == "e4m3":
            y = E4M3Rows(torch.empty(lead + (self.out_features,), dtype=torch.float8_e4m3fn, device=dev),
                         torch.empty(m, dtype=torch.float32, device=dev))
        else:
            y = torch.empty(lead + (self.out_features,), dtype=torch.bfloat16, device=dev)
        if m == 0:
            return y
        if dev.index == _current_device():
            self._run(x, m, w, vecs, scalars, y, dev)
        else:
            with torch.cuda.device(dev):
                self._run(x, m, w, vecs, scalars, y, dev)
        return y

    def _launch_for(self, m, vecs, scalars):
        """The _Launch of m rows with these vectors and scalars bound (made once per key); a gated
        pair's sw2 first among the vectors. With output e4m3 it quantizes y with the layer's quantizer."""
        key = (m, tuple(vecs), tuple(scalars), self.output)
        launch = self._launches.get(key)
        if launch is None:
            launch = self._launches[key] = _Launch(
                self.plan_for(m), [(n, _lib.FT_DTYPE_BF16 if self._vector_dtype(n) == "bfloat16" else _lib.FT_DTYPE_F32)
                                   for n in self._own[2:] + tuple(vecs)], list(scalars),
                quantizer=self._quantizer if self.output == "e4m3" else None)
        return launch

    def _run_op(self, x, weight, operands, scalars):
        """fusedtune::linear's Python implementation for this layer (see op.py): forward's checks of
        the operands given, the launch, and the plan noted for the C++ implementation."""
        if self.output != "bf16":
            raise InvalidArgumentError("fusedtune::linear returns a bf16 y: a layer with output='e4m3' is called "
                                       "directly (layer(x) returns E4M3Rows), not through the operator")
        grad = torch.is_grad_enabled()
        n, k = self.out_features, self.in_features
        names = [name for name, kind, _ in self._op_slots if kind != "scalar" and name != "sx"]
        snames = [name for name, kind, _ in self._op_slots if kind == "scalar"]
        if len(operands) != len(names) or len(scalars) != len(snames):
            raise InvalidArgumentError(f"fusedtune::linear: {len(operands)} operands and {len(scalars)} scalars for "
                                       f"the fp8 epilogue '{self.epilogue.canonical}', which takes {len(names)} "
                                       f"({', '.join(names)}) and {len(snames)}")
        check_no_grad("x", x, grad)
        check_tensor("weight", weight, dtype="float8_e4m3fn", device=None, shape=tuple(self._buffers["weight"].shape))
        dev = weight.device
        check_tensor("x", x, dtype="bfloat16", device=dev, shape=tuple(x.shape[:-1]) + (k,))
        lead = tuple(x.shape[:-1])
        m = _math.prod(lead)
        given = dict(zip(names, operands))
        for name in self._own[1:]:
            check_tensor(name, given[name], dtype="float32", device=dev, shape=(n,),
                         hint=" (one fp32 scale per output channel)")
            check_no_grad(name, given[name], grad)
        # The bias is the layer's own (bind takes it as a held tensor); the rest as forward()'s.
        kwargs = {name: t for name, t in given.items() if name not in self._own and name != "bias"}
        kwargs.update(zip(snames, scalars))
        vecs, sc = self._binding.bind(m, n, lambda name: given.get(name) if name == "bias" else None, kwargs,
                                      dtype=self._vector_dtype, device=dev, grad_enabled=grad, lead=lead)
        y = torch.empty(lead + (n,), dtype=torch.bfloat16, device=dev)
        if m == 0:
            return y
        with torch.cuda.device(dev):
            self._run(x, m, weight, vecs, sc, y, dev, given["sw"], given.get("sw2"))
        self._quantizer._forget_hook = _native.forget_object
        for _ in range(2):  # a layer made while the C++ implementation was off: described now
            if _native.plan(self.op_handle, dev.index, m, _native.FT_DTYPES["float8_e4m3fn"], self.plan_for(m),
                            quantizer=self._quantizer._q.value):
                break
            self._describe_op()
        return y

    def _run(self, x, m, w, vecs, scalars, y, dev, sw=None, sw2=None):
        """The quantizer on x (not for E4M3Rows: its codes and scales as given), then the plan of m
        rows, on dev (the current device) and its stream; sw and sw2 the layer's scales unless
        given; y bf16, or E4M3Rows for output e4m3."""
        k = self.in_features
        if self._quantizer is None:
            self._quantizer = Quantizer(self._db)
        launch = self._launch_for(m, vecs, scalars)
        stream = _stream(dev)
        if isinstance(x, E4M3Rows):
            xq, sx = x.codes.data_ptr(), x.scales.data_ptr()
        else:
            # x's codes and scales in one allocation per call (eager frees it once the stream is past
            # both launches; a CUDA graph keeps its pool's): the codes, then the scales 16-byte aligned.
            codes = (m * k + 15) // 16 * 16
            scratch = torch.empty(codes + 4 * m, dtype=torch.uint8, device=dev)
            xq = scratch.data_ptr()
            sx = xq + codes
            self._quantizer._run(x.data_ptr(), _lib.FT_DTYPE_BF16, m, k, True, xq, sx, stream)
        sw = self._buffers["weight_scale"] if sw is None else sw
        sw2 = self._buffers["weight_scale2"] if sw2 is None else sw2
        own = [sw2.data_ptr()] if len(self._own) > 2 else []
        if isinstance(y, E4M3Rows):  # E's bf16 result in a buffer of this call (held to the launch), then codes, scales
            work = torch.empty(m * self.out_features, dtype=torch.bfloat16, device=dev)
            out = dict(y=y.codes.data_ptr(), y_scales=y.scales.data_ptr(), y_work=work.data_ptr())
        else:
            out = dict(y=y.data_ptr())
        launch(xq, w.data_ptr(), sx=sx, sw=sw.data_ptr(), vectors=own + [t.data_ptr() for t in vecs.values()],
               scalars=list(scalars.values()), stream=stream, **out)


__all__ = ["fp8_epilogue", "E4M3Rows", "Quantizer", "launch_typed", "FP8Linear"]
