"""The model path as a torch.compile backend: each graph Dynamo hands over is fused (fuse(): the
captured GEMMs and epilogues served by FusedLinear layers) and the rest compiled by Inductor, so
what fusedtune does not serve still gets torch.compile's fusions.

    from fusedtune.torch import backend
    fast = torch.compile(model, backend=backend(db="model.db"))

torch.compile(fuse(model, x, db=...)) does the same for one set of input shapes; the backend also
fuses the graphs of later shapes and after graph breaks as Dynamo makes them (each is captured,
looked up or tuned, and compiled once).
"""
import warnings

import torch
from torch import nn

from .fuse import fuse


class FusedNotApplied(UserWarning):
    """A graph the torch.compile backend hands to Inductor without fusing it."""


class _Lifted(nn.Module):
    """Dynamo's graph with the parameters it takes as inputs held as this module's own, so that
    torch.export traces them as parameters (weights, col vectors, scalars) and not as activations."""

    def __init__(self, gm, example_inputs):
        super().__init__()
        self.gm = gm
        self.slots = []
        for i, t in enumerate(example_inputs):
            if isinstance(t, nn.Parameter):
                self.register_parameter(f"p{i}", t)
                self.slots.append(f"p{i}")
            else:
                self.slots.append(None)

    def forward(self, *user):
        it = iter(user)
        return self.gm(*[getattr(self, s) if s else next(it) for s in self.slots])


def backend(db=None, autotune=False, math=None, nearest=False, inductor=True, floor=True, _layer_for=None):
    """A torch.compile backend: fuse() on each graph (db, autotune, math, nearest and floor as fuse
    takes them), then Inductor's compile_fx on the result (inductor=False: the fused graph runs as it is).
    Errors are fuse's (NotTunedError naming the tune command, a model not on CUDA), raised by
    torch.compile as BackendCompilerFailed."""
    def compile_fn(gm, example_inputs):
        if any(not isinstance(t, torch.Tensor) for t in example_inputs):
            # Dynamo's dynamic shapes pass sizes as inputs, which torch.export would fix at the
            # example's values: this graph is left to Inductor, unfused, rather than risk that.
            warnings.warn("fusedtune.torch.backend: a graph with symbolic sizes among its inputs (torch.compile's "
                          "dynamic shapes) is compiled by Inductor unfused; torch.compile(..., dynamic=False) fuses "
                          "each shape, fuse(model, x, dynamic=True) serves a changing batch", FusedNotApplied,
                          stacklevel=2)
            from torch._inductor.compile_fx import compile_fx
            return compile_fx(gm, example_inputs) if inductor else gm.forward
        lifted = _Lifted(gm, example_inputs)
        user = [i for i, s in enumerate(lifted.slots) if s is None]
        inputs = [example_inputs[i] for i in user]
        fused = fuse(lifted, *inputs, db=db, autotune=autotune, math=math, nearest=nearest, floor=floor,
                     _layer_for=_layer_for)
        run = fused
        if inductor:
            from torch._inductor.compile_fx import compile_fx
            run = compile_fx(fused, inputs)

        def call(*args):
            return run(*[args[i] for i in user])
        call.fused = fused
        return call
    return compile_fn


__all__ = ["FusedNotApplied", "backend"]
