"""fusedtune.torch: fusedtune for PyTorch models.

    from fusedtune.torch import FusedLinear, problems, tune, fuse
    layer = FusedLinear.from_linear(lin, "min(x + bias, c) - c where c = 2").cuda()   # one layer
    print(problems(model, x))             # a whole model: its GEMMs and epilogues (no GPU needed)
    tune(model, x, db="fusedtune.db")     # tunes what the database lacks
    fast = fuse(model, x, db="fusedtune.db")
    fast = torch.compile(model, backend=backend(db="fusedtune.db"))   # the rest to Inductor

The package holds the layer (layer.py: FusedLinear, an inference-only nn.Module for nn.Linear + an
epilogue), the torch operator it runs through under torch.compile (op.py: fusedtune::linear), and
the model path: capture.py (problems; ops.py the ops an epilogue takes, expr.py its text), tune.py
(tune), fuse.py (fuse), backend.py (backend). docs/PYTHON.md is the manual.
"""
from .layer import FusedLinear, NearestShapeWarning, interleave_gated
from .capture import Capture, CapturedProblem, LeftInTorch, problems
from .tune import tune
from .fuse import FloorWarning, fuse
from .backend import backend

__all__ = ["FusedLinear", "NearestShapeWarning", "interleave_gated", "Capture", "CapturedProblem", "LeftInTorch",
           "problems", "tune", "fuse", "FloorWarning", "backend"]
