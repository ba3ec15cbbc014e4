"""What FusedLinear checks before a launch, written against any tensor-like object (shape, dtype,
device, is_contiguous(), data_ptr(), element_size(), requires_grad), so that the checks are
tested without torch. Every error names the argument it is about.
"""
import numbers

from .errors import InvalidArgumentError


def dtype_name(t):
    """torch.float32 -> "float32"."""
    return str(t.dtype).rsplit(".", 1)[-1]


def device_str(t):
    d = t.device
    return d.type if d.index is None else f"{d.type}:{d.index}"


def check_tensor(name, t, *, dtype, device, shape, hint=""):
    """t is a CUDA tensor on device of dtype and shape (None in shape: any size), contiguous and
    aligned to its element size. device: a torch-like device with .type and .index."""
    if not hasattr(t, "data_ptr") or not hasattr(t, "shape"):
        raise InvalidArgumentError(f"{name} must be a tensor, not {type(t).__name__}")
    if t.device.type != "cuda":
        raise InvalidArgumentError(f"{name} is on {device_str(t)}: FusedLinear runs on CUDA tensors")
    if device is not None and t.device.index != device.index:
        raise InvalidArgumentError(f"{name} is on {device_str(t)}, the layer's weight on "
                                   f"{device.type}:{device.index}: every tensor must be on one device")
    if dtype_name(t) != dtype:
        raise InvalidArgumentError(f"{name} is {dtype_name(t)}, expected {dtype} (the layer's math mode "
                                   f"computes on {dtype} tensors)")
    got = tuple(t.shape)
    if len(got) != len(shape) or any(w is not None and g != w for g, w in zip(got, shape)):
        want = "[" + ", ".join("*" if w is None else str(w) for w in shape) + "]"
        raise InvalidArgumentError(f"{name} has shape {list(got)}, expected {want}{hint}")
    if not t.is_contiguous():
        raise InvalidArgumentError(f"{name} is not contiguous (strides {tuple(t.stride())}): pass "
                                   f"{name}.contiguous()")
    size = t.element_size()
    if t.data_ptr() % size:
        raise InvalidArgumentError(f"{name} data at 0x{t.data_ptr():x} is not {size}-byte aligned (a view at an "
                                   f"odd offset?): pass {name}.clone()")


def check_no_grad(name, t, grad_enabled):
    """FusedLinear has no backward: an operand that requires grad would get none, silently."""
    if grad_enabled and getattr(t, "requires_grad", False):
        raise InvalidArgumentError(
            f"{name} requires grad, but FusedLinear is inference-only (no backward: the gradient would be "
            f"missing, not computed). Run it under torch.no_grad() or torch.inference_mode(), or pass "
            f"{name}.detach()")


def as_scalar(name, v):
    """A float for a scalar parameter: a real number or a 0-dim CPU tensor (a CUDA one would
    need a device synchronization to read)."""
    if isinstance(v, bool) or not (isinstance(v, numbers.Real) or _is_cpu_scalar_tensor(v)):
        raise InvalidArgumentError(f"scalar {name} must be a real number, not {type(v).__name__}")
    return float(v)


def _is_cpu_scalar_tensor(v):
    return hasattr(v, "dim") and hasattr(v, "device") and v.dim() == 0 and v.device.type == "cpu"


class Binding:
    """How an epilogue's parameters get their values: the layer's bias, buffers and scalars
    given at construction, forward() keyword arguments (which win), and scalar defaults.

    epilogue: core.Epilogue; has_bias: the layer has a bias; scalars: {name: float} given at
    construction; buffers: names of vectors given at construction (held by the layer); own: names
    the layer binds itself on every call (an fp8 layer's scales sx and sw), refused as bias is."""

    def __init__(self, epilogue, has_bias, scalars=None, buffers=(), own=()):
        self.epilogue, self.own = epilogue, frozenset(own)
        names = {p.name: p for p in epilogue.params}
        if "bias" in names and not has_bias:
            raise InvalidArgumentError(f"epilogue '{epilogue.canonical}' uses bias, but the layer has none "
                                       f"(bias=False)")
        if has_bias and "bias" not in names:
            raise InvalidArgumentError(
                f"the layer has a bias, but epilogue '{epilogue.canonical}' does not use it: x there is the GEMM "
                f"result without bias; write bias into the expression (e.g. 'relu(x + bias)') or use bias=False")
        self.scalars = {}
        for name, v in (scalars or {}).items():
            self._param(name, "a scalar value")
            if names[name].kind != "scalar":
                raise InvalidArgumentError(f"{name} is a {names[name].kind} vector in the epilogue, "
                                           f"not a scalar: give a tensor")
            self.scalars[name] = as_scalar(name, v)
        self.buffers = tuple(buffers)
        for name in self.buffers:
            self._param(name, "a vector")
            if names[name].kind == "scalar":
                raise InvalidArgumentError(f"{name} is a scalar in the epilogue, not a vector: give a number")
            if names[name].kind == "mat":
                raise InvalidArgumentError(f"{name} is a matrix operand ([..., out_features], one per call): give it "
                                           f"as forward({name}=...), not in params=")

    def _param(self, name, what):
        p = self.epilogue.param(name)
        if p is None or name == "bias" or name in self.own:
            mine = {"bias"} | self.own
            known = ", ".join(q.name for q in self.epilogue.params if q.name not in mine) or "none"
            why = (f"{name} is the layer's own parameter" if name in mine
                   else "the epilogue has no parameter of that name")
            raise InvalidArgumentError(f"{what} for {name!r}: {why} (its parameters besides "
                                       f"{', '.join(sorted(mine))}: {known})")
        return p

    def bind(self, m, n, get_buffer, kwargs, *, dtype, device, grad_enabled, lead=None):
        """({name: vector or matrix tensor}, {name: float}) for one call of m rows. get_buffer(name)
        gives the layer's tensor for bias and constructor vectors; kwargs are forward()'s; lead: x's
        leading dimensions (a matrix operand has shape lead + (n,); default (m,)). dtype: the
        tensors' element type, or a function of the parameter's name giving it. The layer's own
        names are left to it."""
        for name in kwargs:
            if self.epilogue.param(name) is None or name == "bias" or name in self.own:
                self._param(name, "forward() argument")
        vecs, scalars = {}, {}
        dtype_of = dtype if callable(dtype) else (lambda _name: dtype)
        for p in self.epilogue.params:
            if p.name in self.own:
                continue
            if p.kind == "scalar":
                if p.name in kwargs:
                    scalars[p.name] = as_scalar(p.name, kwargs[p.name])
                elif p.name in self.scalars:
                    scalars[p.name] = self.scalars[p.name]
                elif p.default is None:
                    raise InvalidArgumentError(f"scalar {p.name} has no default in the epilogue and no value: give "
                                               f"it in params= or as forward({p.name}=...)")
                continue
            if p.name in kwargs:
                t = kwargs[p.name]
            elif p.name == "bias" or p.name in self.buffers:
                t = get_buffer(p.name)
            elif p.kind == "mat":
                raise InvalidArgumentError(f"matrix {p.name} has no value: give it as forward({p.name}=...), a "
                                           f"tensor shaped like the output")
            else:
                raise InvalidArgumentError(f"{p.kind} vector {p.name} has no value: give it in params= or as "
                                           f"forward({p.name}=...)")
            if p.kind == "mat":
                shape = tuple(lead if lead is not None else (m,)) + (n,)
                check_tensor(p.name, t, dtype=dtype_of(p.name), device=device, shape=shape,
                             hint=" (a matrix: the output's shape)")
                check_no_grad(p.name, t, grad_enabled)
                vecs[p.name] = t
                continue
            length = n if p.kind == "col" else m
            hint = " (a col vector: out_features long)" if p.kind == "col" else " (a row vector: one per input row)"
            check_tensor(p.name, t, dtype=dtype_of(p.name), device=device, shape=(length,), hint=hint)
            check_no_grad(p.name, t, grad_enabled)
            vecs[p.name] = t
        return vecs, scalars
