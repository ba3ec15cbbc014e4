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
library would refuse and launches on the current stream (FusedLinear._run_op); CPU is an error.
"""
import itertools
import weakref

import torch

from ..errors import InvalidArgumentError

NAMESPACE = "fusedtune"
SCHEMA = "linear(Tensor x, Tensor weight, Tensor[] operands, float[] scalars, int layer) -> Tensor"

_layers = {}  # handle -> weakref to a FusedLinear
_handles = itertools.count(1)


def register(layer):
    """A new handle for layer, valid while the layer lives."""
    handle = next(_handles)
    _layers[handle] = weakref.ref(layer, lambda _ref, h=handle: _layers.pop(h, None))
    return handle


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
    _check_shapes(x, weight)
    return layer_of(layer)._run_op(x, weight, operands, scalars)


def _not_cuda(x, weight, operands, scalars, layer):
    raise InvalidArgumentError(f"x is on {x.device}, weight on {weight.device}: FusedLinear runs on CUDA tensors")


_lib = torch.library.Library(NAMESPACE, "DEF")
_lib.define(SCHEMA)
_register_fake = getattr(torch.library, "register_fake", None)
if _register_fake is not None:
    _register_fake(f"{NAMESPACE}::linear", _fake, lib=_lib)
else:  # torch < 2.4
    torch.library.impl_abstract(f"{NAMESPACE}::linear", _fake, lib=_lib)
_lib.impl("linear", _cuda, "CUDA")
_lib.impl("linear", _not_cuda, "CPU")

linear = torch.ops.fusedtune.linear

__all__ = ["SCHEMA", "linear", "register", "layer_of"]
