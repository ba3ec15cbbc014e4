"""fusedtune::linear, the torch operator FusedLinear runs through where torch needs an operator:
under torch.compile (Dynamo traces it into the graph; mode="reduce-overhead" captures it in CUDA
graphs), on meta and fake tensors, and for anyone calling it directly:

    torch.ops.fusedtune.linear(x, weight, operands, scalars, layer) -> Tensor

x [..., K] and weight [N, K] of the layer's dtype; operands: the epilogue's tensor parameters in its
slot order (fusedtune.Epilogue.params without the scalars; bias included); scalars: the values of
its scalar parameters in slot order; layer: the int handle of the FusedLinear whose database and
plans serve the call (FusedLinear.op_handle; a plain int, so Dynamo keeps it as a constant). The
call's M (the product of x's leading dimensions) picks the plan, its M bucket, at run time. The
result y [..., N] ([...] after a row reduction, [..., N / w] after a pool: the layer's output
shape) has x's dtype and device. The fake (meta) implementation gives that shape and
dtype and checks x's last dimension against the weight's; the CUDA one checks everything the
library would refuse and launches on the current stream; CPU is an error. The CUDA implementation
is C++ where it was built (csrc/fusedtune_op.cpp, _native.py: native_op_status() says): each call
checked, y allocated and the plan launched there, the plan of a new M resolved once by the Python
implementation (FusedLinear._run_op, registered as fusedtune::_linear_py), which also raises every
error. FP8Linear's calls go through it too (its operands: sw, sw2, the bias, ..., all but sx).
"""
import itertools
import weakref

import torch

from . import _native
from ..errors import InvalidArgumentError

NAMESPACE = "fusedtune"
SCHEMA = "linear(Tensor x, Tensor weight, Tensor[] operands, float[] scalars, int layer) -> Tensor"

_layers = {}  # handle -> weakref to a FusedLinear
_handles = itertools.count(1)


def register(layer):
    """A new handle for layer, valid while the layer lives."""
    handle = next(_handles)
    _layers[handle] = weakref.ref(layer, lambda _ref, h=handle: _forget(h))
    return handle


def _forget(handle):
    _layers.pop(handle, None)
    _native.forget(handle)


def layer_of(handle):
    """The FusedLinear of a handle; InvalidArgumentError when it is gone."""
    ref = _layers.get(handle)
    layer = ref() if ref is not None else None
    if layer is None:
        raise InvalidArgumentError(f"fusedtune::linear: layer handle {handle} names no live FusedLinear (a graph "
                                   f"that outlived its model, or a handle from another process)")
    return layer


def _check_shapes(x, weight):
    if x.dim() < 1 or weight.dim() != 2 or x.shape[-1] != weight.shape[1]:
        raise InvalidArgumentError(f"fusedtune::linear: x has shape {list(x.shape)}, weight {list(weight.shape)}: "
                                   f"expected x [..., K] and weight [N, K]")


def _fake(x, weight, operands, scalars, layer):
    _check_shapes(x, weight)
    # The layer's output shape (a reduction's or a pool's); [..., N] for a handle that names no
    # live layer (the CUDA implementation refuses that call).
    ref = _layers.get(layer)
    live = ref() if ref is not None else None
    return x.new_empty((*x.shape[:-1], *(live._y_tail if live is not None else (weight.shape[0],))))


def _cuda(x, weight, operands, scalars, layer):
    return layer_of(layer)._run_op(x, weight, operands, scalars)


def _not_cuda(x, weight, operands, scalars, layer):
    # A live layer's checks name the argument ("weight is on cpu: ...", "x is float64, ..."), as
    # its forward's do.
    ref = _layers.get(layer)
    live = ref() if ref is not None else None
    if live is not None:
        live._run_op(x, weight, operands, scalars)
    raise InvalidArgumentError(f"x is on {x.device}, weight on {weight.device}: FusedLinear runs on CUDA tensors")


_lib = torch.library.Library(NAMESPACE, "DEF")
_lib.define(SCHEMA)
# The Python implementation under its own name: the C++ one (_native.py) sends it what its table
# lacks (a plan not yet resolved) and every call that fails its checks, which raises here.
_lib.define(SCHEMA.replace("linear(", "_linear_py(", 1))
_register_fake = getattr(torch.library, "register_fake", None) or torch.library.impl_abstract  # torch < 2.4
for _name in ("linear", "_linear_py"):
    _register_fake(f"{NAMESPACE}::{_name}", _fake, lib=_lib)
_lib.impl("_linear_py", _cuda, "CUDA")
_lib.impl("_linear_py", _not_cuda, "CPU")
_native.load()
if not _native.active():  # else its library registered fusedtune::linear's CUDA and CPU kernels
    _lib.impl("linear", _cuda, "CUDA")
    _lib.impl("linear", _not_cuda, "CPU")

linear = torch.ops.fusedtune.linear
# The overload's builtin: a call of it is the C++ dispatcher's, with no Python frame (OpOverload's
# __call__ is one more).
_call = getattr(linear.default, "_op", linear.default)


class PreparedArgs:
    """A layer's mixin (before nn.Module) that drops the operator's arguments forward prepared once
    (_native_args: the operand tensors the layer holds) wherever nn.Module replaces a held tensor
    without __setattr__: a buffer registered again, .to() / .cuda() / .half() (_apply makes new
    buffer tensors). __setattr__ drops them too (each layer's own)."""

    def _apply(self, *args, **kwargs):
        out = super()._apply(*args, **kwargs)
        self.__dict__["_native_args"] = None
        return out

    def register_buffer(self, *args, **kwargs):
        super().register_buffer(*args, **kwargs)
        self.__dict__["_native_args"] = None

    def register_parameter(self, *args, **kwargs):
        super().register_parameter(*args, **kwargs)
        self.__dict__["_native_args"] = None


def native_op_status():
    """One line: "native: <path of the C++ implementation>" when fusedtune::linear's CUDA calls run
    in C++ (FusedLinear's and FP8Linear's forward call the operator), else "python: <why not>"
    (they launch through Python: the compiled _fusedtune_ext or ctypes)."""
    return _native.status()


__all__ = ["SCHEMA", "linear", "register", "layer_of", "native_op_status"]
