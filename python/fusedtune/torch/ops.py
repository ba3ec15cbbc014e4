"""The ops an epilogue takes, as capture.py grows one from its GEMM: per aten op of torch.export's
graph, a handler that writes the op into the epilogue's expression (expr.py) or refuses it with the
one-line reason that lands in Capture.left. A handler gets the fx node and the growing region (its
values, operands and names: capture._Region)."""
import math as _math
import operator
import re

import torch

from . import expr as E

_EPS = 1e-5  # the eps of fusedtune's groupnorm and batchnorm


class Refuse(Exception):
    """An op the epilogue cannot take, with the one-line reason."""


def _val(n):
    v = n.meta.get("val") if isinstance(n, torch.fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def _is_attr(n):
    return isinstance(n, torch.fx.Node) and n.op == "get_attr"


class _V:
    """A value inside the epilogue: its expression, torch shape, and whether a row reduction made it
    one value per row."""
    __slots__ = ("e", "shape", "reduced", "tuple_of")

    def __init__(self, e, shape, reduced=False, tuple_of=None):
        self.e, self.shape, self.reduced, self.tuple_of = e, tuple(shape), reduced, tuple_of


def _opname(n):
    t = str(n.target) if n.op == "call_function" else n.op
    m = re.match(r"aten\.(\w+?)_?\.\w+$", t)
    return m.group(1) if m else getattr(n.target, "__name__", t)


def _module_of(n):
    stack = n.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, kind = list(stack.values())[-1]
    kind = kind.rsplit(".", 1)[-1] if isinstance(kind, str) else getattr(kind, "__name__", str(kind))
    return f"{path}: {kind}" if path else ""


def _arg(n, i, name, default=None):
    if i < len(n.args):
        return n.args[i]
    return n.kwargs.get(name, default)


def _dims(n, v, dims):
    """The reduced dims as a list of non-negative ints."""
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        raise Refuse(f"{_opname(n)} over every element: fusedtune reduces along a row")
    if isinstance(dims, int):
        dims = [dims]
    nd = len(v.shape)
    return sorted(d % nd for d in dims)


def _along_row(n, v, dims):
    """'identity' when the reduction runs over a dimension of one value (a row already reduced),
    'row' when over the features; Refuse otherwise."""
    d = _dims(n, v, dims)
    if all(v.shape[i] == 1 for i in d):
        return "identity"
    if v.reduced or d != [len(v.shape) - 1] or v.shape[-1] == 1:
        raise Refuse(f"{_opname(n)} over dim {d if len(d) > 1 else d[0]} of {list(v.shape)}: fusedtune reduces "
                     f"along a row (the GEMM's features, the last dimension)")
    return "row"


def _unary(f):
    def h(n, r):
        v = r.src(n)
        return r.value(n, E.call(f, v.e), v)
    return h


def _binary(f, swap=False, commutes=False, doubles=False, swish=False):
    def h(n, r):
        a, b = n.args[0], n.args[1]
        if swap:
            a, b = b, a
        alpha = n.kwargs.get("alpha", 1)
        if alpha != 1:
            raise Refuse(f"{_opname(n)} with alpha={alpha}")
        va, vb = r.region(a), r.region(b)
        out = tuple(int(d) for d in _val(n).shape)
        if va is not None and va.tuple_of is None and vb is not None and vb.tuple_of is None:
            if doubles and a is b:  # v + v is v * 2 exactly, and reads v (a reduction's result) once
                return _V(va.e * 2, out, va.reduced)
            ea, eb = va.e, vb.e
            if swish:  # v * sigmoid(v) is silu(v) (within an ulp), and reads v (a norm's result) once
                for u, w in ((ea, eb), (eb, ea)):
                    if w.op == "sigmoid" and E.same(w.args[0], u):
                        return _V(E.call("silu", u), out, va.reduced and vb.reduced)
            if commutes and E.uses(eb, "x") and not E.uses(ea, "x"):  # a gated pair: x's side first
                ea, eb = eb, ea
            return _V(f(ea, eb), out, va.reduced and vb.reduced)
        if va is not None and va.tuple_of is None:
            return _V(f(va.e, r.operand(b, va, out)), out, va.reduced)
        if vb is not None and vb.tuple_of is None:
            if commutes:  # the GEMM's side first (x + bias + r), the same value in IEEE arithmetic
                return _V(f(vb.e, r.operand(a, vb, out)), out, vb.reduced)
            return _V(f(r.operand(a, vb, out), vb.e), out, vb.reduced)
        raise Refuse("neither operand is the GEMM's result")
    return h


def _identity(n, r):
    v = r.src(n)
    return r.value(n, v.e, v)


def _view(n, r):
    v = r.src(n)
    out = tuple(int(d) for d in _val(n).shape)
    if v.reduced:
        ok = _math.prod(out) == r.m
    else:
        ok = bool(out) and out[-1] == v.shape[-1] and _math.prod(out[:-1]) == r.m
    if not ok:
        raise Refuse(f"{_opname(n)} from {list(v.shape)} to {list(out)} mixes rows and features")
    return _V(v.e, out, v.reduced)


def _dropout(n, r):
    v = r.src(n)
    p, train = _arg(n, 1, "p", 0.5), _arg(n, 2, "train", True)
    if train and p > 0:
        raise Refuse(f"dropout(p={p}) in training mode zeroes random elements: not an epilogue (model.eval() "
                     f"or p=0 lets the epilogue go on)")
    return r.value(n, v.e, v)


def _reduce(f):
    def h(n, r):
        v = r.src(n)
        if str(n.target) in ("aten.sum.dim_IntList", "aten.mean.dim") and n.kwargs.get("dtype") is not None:
            raise Refuse(f"{_opname(n)} with a dtype")
        out = tuple(int(d) for d in _val(n).shape) if _val(n) is not None else None
        if _along_row(n, v, _arg(n, 1, "dim")) == "identity":
            return _V(v.e, out, v.reduced)
        return _V(E.call(f, v.e), out, True)
    return h


def _reduce_pair(f):
    def h(n, r):
        v = r.src(n)
        if _along_row(n, v, _arg(n, 1, "dim")) == "identity":
            return _V(None, (), v.reduced, tuple_of=(v.e, True))
        return _V(None, (), True, tuple_of=(E.call(f, v.e), False))
    return h


def _getitem(n, r):
    t = r.region(n.args[0])
    if t is None or t.tuple_of is None:
        raise Refuse("an item of a value not from the epilogue")
    if n.args[1] != 0:
        raise Refuse(f"the indices of {_opname(n.args[0])} (an argmax) are not an epilogue")
    e, _ = t.tuple_of
    out = tuple(int(d) for d in _val(n).shape)
    return _V(e, out, t.reduced)


def _softmax(f):
    def h(n, r):
        v = r.src(n)
        if str(n.target).endswith(".int") and _arg(n, 2, "dtype") is not None:
            raise Refuse(f"{_opname(n)} with a dtype")
        if str(n.target).startswith("aten._") and _arg(n, 2, "half_to_float"):
            raise Refuse(f"{_opname(n)} to float")
        if _along_row(n, v, _arg(n, 1, "dim")) == "identity":
            raise Refuse(f"{_opname(n)} over one value")
        return r.value(n, E.call(f, v.e), v, reduced=False)
    return h


def _eps(n, eps, what):
    if abs(float(eps) - _EPS) > 1e-12:
        raise Refuse(f"{what} with eps={eps}: fusedtune's {what} uses eps=1e-5")


def _affine(n, r, e, v, weight, bias):
    if weight is not None:
        e = e * r.operand(weight, v, v.shape, "weight")
    if bias is not None:
        e = e + r.operand(bias, v, v.shape, "bias")
    return e


def _rows_2d(n, r, v, what):
    if v.reduced or len(v.shape) != 2 or v.shape[-1] != r.n:
        raise Refuse(f"{what} of a {list(v.shape)} tensor: fusedtune's {what} takes the GEMM's [M, N] result")


def _group_norm(n, r):
    v = r.src(n)
    _rows_2d(n, r, v, "groupnorm")
    groups = int(_arg(n, 1, "num_groups"))
    _eps(n, _arg(n, 4, "eps", 1e-5), "groupnorm")
    e = E.call("groupnorm", v.e, groups)
    return r.value(n, _affine(n, r, e, v, _arg(n, 2, "weight"), _arg(n, 3, "bias")), v, reduced=False)


def _layer_norm(n, r):
    v = r.src(n)
    shape = list(_arg(n, 1, "normalized_shape"))
    if v.reduced or shape != [r.n] or v.shape[-1] != r.n:
        raise Refuse(f"layer_norm over {shape}: fusedtune normalizes a row of the GEMM's N features")
    _eps(n, _arg(n, 4, "eps", 1e-5), "layernorm (groupnorm with one group)")
    e = E.call("groupnorm", v.e, 1)
    return r.value(n, _affine(n, r, e, v, _arg(n, 2, "weight"), _arg(n, 3, "bias")), v, reduced=False)


def _batch_norm(n, r):
    v = r.src(n)
    _rows_2d(n, r, v, "batchnorm")
    weight, bias, mean, var = (_arg(n, i, k) for i, k in ((1, "weight"), (2, "bias"), (3, "running_mean"),
                                                            (4, "running_var")))
    training, eps = _arg(n, 5, "training"), _arg(n, 7, "eps", 1e-5)
    if training or mean is None:
        _eps(n, eps, "batchnorm")
        e = E.call("batchnorm", v.e)
        if training and mean is not None:
            r.notes[n] = (f"{_module_of(n) or n.name} in training mode: the fused layer normalizes with the "
                          f"batch's statistics as the module does, but does not update running_mean/running_var")
    else:  # eval: the running statistics, written out
        e = (v.e - r.operand(mean, v, v.shape, "running_mean")) / E.call(
            "sqrt", r.operand(var, v, v.shape, "running_var") + E.num(eps))
    return r.value(n, _affine(n, r, e, v, weight, bias), v, reduced=False)


def _instance_norm(n, r):
    v = r.src(n)
    s = v.shape
    if v.reduced or len(s) < 3 or s[-1] != r.n or _math.prod(s[2:]) != r.n or _math.prod(s[:2]) != r.m:
        raise Refuse(f"instance_norm of a {list(s)} tensor: a row norm only when each instance is one row of "
                     f"the GEMM's features")
    if not _arg(n, 5, "use_input_stats", True):
        raise Refuse("instance_norm with running statistics")
    if _arg(n, 1, "weight") is not None or _arg(n, 2, "bias") is not None:
        raise Refuse("instance_norm with an affine (per-channel weight and bias)")
    _eps(n, _arg(n, 7, "eps", 1e-5), "instance norm (groupnorm with one group)")
    return r.value(n, E.call("groupnorm", v.e, 1), v, reduced=False)


def _pool(f):
    def h(n, r):
        v = r.src(n)
        t = str(n.target)
        kernel = _arg(n, 1, "kernel_size")
        w = int(kernel[0] if isinstance(kernel, (list, tuple)) else kernel)
        stride = _arg(n, 2, "stride", [])
        stride = list(stride) if isinstance(stride, (list, tuple)) else [stride]
        padding = _arg(n, 3, "padding", 0)
        padding = list(padding) if isinstance(padding, (list, tuple)) else [padding]
        if t.startswith("aten.max_pool1d"):
            dilation = _arg(n, 4, "dilation", 1)
            ceil = _arg(n, 5, "ceil_mode", False)
            dilation = list(dilation) if isinstance(dilation, (list, tuple)) else [dilation]
        else:
            dilation, ceil = [1], _arg(n, 4, "ceil_mode", False)
        if stride not in ([], [w]) or any(padding) or dilation != [1] or ceil:
            raise Refuse(f"{_opname(n)} with stride, padding, dilation or ceil_mode: fusedtune pools disjoint "
                         f"windows of w features")
        s = v.shape
        if v.reduced or not s or s[-1] != r.n or len(s) not in (2, 3) or (len(s) == 3 and s[0] * s[1] != r.m):
            raise Refuse(f"{_opname(n)} of a {list(s)} tensor: fusedtune pools along the GEMM's N features")
        return r.value(n, E.call(f, v.e, w), v, reduced=False)
    return h


def _pow(n, r):
    v = r.src(n)
    p = _arg(n, 1, "exponent")
    forms = {1: lambda e: e, 2: lambda e: e * e, 3: lambda e: e * e * e, 0.5: lambda e: E.call("sqrt", e),
             -1: lambda e: 1 / e}
    if isinstance(p, bool) or not isinstance(p, (int, float)) or float(p) not in forms:
        raise Refuse(f"pow with exponent {p}: the epilogue writes powers 1, 2, 3, 0.5 and -1")
    return r.value(n, forms[float(p)](v.e), v)


def _clamp(n, r):
    v = r.src(n)
    lo, hi = _arg(n, 1, "min"), _arg(n, 2, "max")
    for b in (lo, hi):
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float))):
            raise Refuse("clamp with tensor bounds")
    if lo is not None and hi is not None:
        e = E.call("clamp", v.e, lo, hi)
    elif lo is not None:
        e = E.call("max", v.e, lo)
    elif hi is not None:
        e = E.call("min", v.e, hi)
    else:
        e = v.e
    return r.value(n, e, v)


def _clamp_one(f):
    def h(n, r):
        v = r.src(n)
        b = n.args[1]
        if isinstance(b, bool) or not isinstance(b, (int, float)):
            raise Refuse(f"{_opname(n)} with a tensor bound")
        return r.value(n, E.call(f, v.e, b), v)
    return h


def _hardtanh(n, r):
    v = r.src(n)
    return r.value(n, E.call("clamp", v.e, _arg(n, 1, "min_val", -1.0), _arg(n, 2, "max_val", 1.0)), v)


def _leaky(n, r):
    v = r.src(n)
    return r.value(n, E.call("leaky_relu", v.e, _arg(n, 1, "negative_slope", 0.01)), v)


def _gelu(n, r):
    v = r.src(n)
    approx = n.kwargs.get("approximate", n.args[1] if len(n.args) > 1 else "none")
    return r.value(n, E.call("gelu_tanh" if approx == "tanh" else "gelu", v.e), v)


def _softplus(n, r):
    v = r.src(n)
    beta, threshold = _arg(n, 1, "beta", 1), _arg(n, 2, "threshold", 20)
    if threshold != 20:
        raise Refuse(f"softplus with threshold={threshold}: fusedtune's softplus has torch's default 20")
    e = E.call("softplus", v.e) if beta == 1 else E.call("softplus", v.e * E.num(beta)) / E.num(beta)
    return r.value(n, e, v)


def _elu(n, r):
    v = r.src(n)
    if any(_arg(n, i, k, 1) != 1 for i, k in ((1, "alpha"), (2, "scale"), (3, "input_scale"))):
        raise Refuse("elu with alpha, scale or input_scale other than 1")
    return r.value(n, E.call("elu", v.e), v)


def _hardswish(n, r):
    v = r.src(n)
    return r.value(n, v.e * E.call("clamp", v.e + 3, 0, 6) / 6, v)


def _hardsigmoid(n, r):
    v = r.src(n)
    return r.value(n, E.call("clamp", v.e + 3, 0, 6) / 6, v)


def _neg(n, r):
    v = r.src(n)
    return r.value(n, -v.e, v)


def _recip(n, r):
    v = r.src(n)
    return r.value(n, 1 / v.e, v)


def _rsqrt(n, r):
    v = r.src(n)
    return r.value(n, 1 / E.call("sqrt", v.e), v)


def _to_copy(n, r):
    v = r.src(n)
    out = _val(n)
    if out is not None and out.dtype == torch.float32 and r.dtype in (torch.bfloat16, torch.float16):
        # An upcast (logits.float()): the epilogue runs in fp32 on the accumulator and its result,
        # stored in the GEMM's dtype, is converted after.
        r.dtypes.add(torch.float32)
        r.notes[n] = (f"{n.name} converts to float32: the fused layer computes E in fp32 and stores its result "
                      f"in {str(r.dtype).replace('torch.', '')}, converted to float32 after")
        return r.value(n, v.e, v)
    if out is None or out.dtype != r.dtype:
        raise Refuse(f"a conversion to {getattr(out, 'dtype', '?')}")
    return r.value(n, v.e, v)


def _min(a, b):
    return E.call("min", a, b)


def _max(a, b):
    return E.call("max", a, b)


_HANDLERS = {}
for _names, _h in [
    (("add.Tensor", "add.Scalar", "add_.Tensor", "add_.Scalar"),
     _binary(lambda a, b: a + b, commutes=True, doubles=True)),
    (("sub.Tensor", "sub.Scalar", "sub_.Tensor", "sub_.Scalar"), _binary(lambda a, b: a - b)),
    (("rsub.Scalar", "rsub.Tensor"), _binary(lambda a, b: a - b, swap=True)),
    (("mul.Tensor", "mul.Scalar", "mul_.Tensor", "mul_.Scalar"), _binary(lambda a, b: a * b, commutes=True, swish=True)),
    (("div.Tensor", "div.Scalar", "div_.Tensor", "div_.Scalar"), _binary(lambda a, b: a / b)),
    (("minimum.default", "min.other", "fmin.default"), _binary(_min)),
    (("maximum.default", "max.other", "fmax.default"), _binary(_max)),
    (("relu.default", "relu_.default"), _unary("relu")),
    (("sigmoid.default", "sigmoid_.default"), _unary("sigmoid")),
    (("silu.default", "silu_.default"), _unary("silu")),
    (("tanh.default", "tanh_.default"), _unary("tanh")),
    (("mish.default", "mish_.default"), _unary("mish")),
    (("abs.default", "abs_.default"), _unary("abs")),
    (("exp.default", "exp_.default"), _unary("exp")),
    (("log.default", "log_.default"), _unary("log")),
    (("sqrt.default", "sqrt_.default"), _unary("sqrt")),
    (("gelu.default", "gelu_.default"), _gelu),
    (("softplus.default",), _softplus),
    (("elu.default", "elu_.default"), _elu),
    (("hardtanh.default", "hardtanh_.default"), _hardtanh),
    (("leaky_relu.default", "leaky_relu_.default"), _leaky),
    (("clamp.default", "clamp_.default"), _clamp),
    (("clamp_min.default", "clamp_min_.default"), _clamp_one("max")),
    (("clamp_max.default", "clamp_max_.default"), _clamp_one("min")),
    (("hardswish.default", "hardswish_.default"), _hardswish),
    (("hardsigmoid.default", "hardsigmoid_.default"), _hardsigmoid),
    (("neg.default", "neg_.default"), _neg),
    (("reciprocal.default",), _recip),
    (("rsqrt.default",), _rsqrt),
    (("pow.Tensor_Scalar",), _pow),
    (("clone.default", "detach.default", "alias.default", "contiguous.default", "lift_fresh_copy.default"),
     _identity),
    (("_to_copy.default", "to.dtype", "to.dtype_layout"), _to_copy),
    (("view.default", "reshape.default", "_unsafe_view.default", "unsqueeze.default", "squeeze.dim",
      "squeeze.dims", "squeeze.default", "flatten.using_ints", "expand.default"), _view),
    (("dropout.default", "dropout_.default", "feature_dropout.default"), _dropout),
    (("sum.dim_IntList",), _reduce("rowsum")),
    (("mean.dim",), _reduce("rowmean")),
    (("amax.default",), _reduce("rowmax")),
    (("amin.default",), _reduce("rowmin")),
    (("logsumexp.default",), _reduce("logsumexp")),
    (("max.dim",), _reduce_pair("rowmax")),
    (("min.dim",), _reduce_pair("rowmin")),
    (("softmax.int", "_softmax.default"), _softmax("softmax")),
    (("log_softmax.int", "_log_softmax.default"), _softmax("log_softmax")),
    (("group_norm.default",), _group_norm),
    (("layer_norm.default",), _layer_norm),
    (("batch_norm.default",), _batch_norm),
    (("instance_norm.default",), _instance_norm),
    (("max_pool1d.default",), _pool("maxpool")),
    (("avg_pool1d.default",), _pool("avgpool")),
]:
    for _n in _names:
        _HANDLERS["aten." + _n] = _h


def _apply(n, r):
    if n.target is operator.getitem:
        return _getitem(n, r)
    h = _HANDLERS.get(str(n.target))
    if h is None:
        raise Refuse(f"'{_opname(n)}' has no form in fusedtune's epilogue language")
    return h(n, r)
