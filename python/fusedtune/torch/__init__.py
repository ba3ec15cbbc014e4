"""fusedtune.torch: fusedtune for PyTorch models.

    from fusedtune.torch import FusedLinear
    layer = FusedLinear.from_linear(lin, "min(x + bias, c) - c where c = 2").cuda()

The package holds the layer (layer.py: FusedLinear, an inference-only nn.Module for nn.Linear + an
epilogue) and the torch operator it runs through under torch.compile (op.py: fusedtune::linear).
docs/PYTHON.md is the manual.
"""
from .layer import FusedLinear, NearestShapeWarning, interleave_gated

__all__ = ["FusedLinear", "NearestShapeWarning", "interleave_gated"]
