"""fusedtune.torch_op: the torch operator fusedtune::linear, kept at this path for code that imports
it from here; it lives in fusedtune.torch.op."""
from .torch.op import SCHEMA, layer_of, linear, register  # noqa: F401

__all__ = ["SCHEMA", "linear", "register", "layer_of"]
