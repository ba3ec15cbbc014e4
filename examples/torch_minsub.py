"""examples/torch_minsub.py: the founding problem in PyTorch, eager and through fusedtune.

Model is nn.Linear(16384, 16384) -> torch.min(x, c) -> x - c at batch 128; ModelNew is the same
layer as one fusedtune.torch.FusedLinear ("min(x + bias, c) - c where c = 2"), sharing its
weight and bias. The script checks both against float64, checks they agree, and times them.

    python3 examples/torch_minsub.py --db DB [--math fp32|tf32|bf16|fp16]
    (tune first: fusedtune --db DB tune --shape 128x16384x16384 --epilogue minsub [--math M])

The library is $FUSEDTUNE_LIBRARY, else the one installed beside the package, else ./build's.
"""
import argparse
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import fusedtune  # noqa: E402
from fusedtune.torch import FusedLinear  # noqa: E402

batch_size, in_features, out_features, constant = 128, 16384, 16384, 2.0


class Model(nn.Module):
    """The founding problem: a linear layer, then min with a constant, then minus it."""

    def __init__(self, in_features, out_features, constant):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.constant = nn.Parameter(torch.tensor(constant))

    def forward(self, x):
        x = self.linear(x)
        x = torch.min(x, self.constant)
        x = x - self.constant
        return x


class ModelNew(nn.Module):
    """The same computation as one tuned kernel over Model's own weight and bias."""

    def __init__(self, model, db=None, math=None):
        super().__init__()
        self.fused = FusedLinear.from_linear(model.linear, "min(x + bias, c) - c where c = 2", math=math, db=db,
                                             params={"c": float(model.constant)})

    def forward(self, x):
        return self.fused(x)


def median_ms(fn, reps=50):
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for _ in range(5):
        fn()
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return sorted(s.elapsed_time(e) for s, e in zip(starts, ends))[reps // 2]


def rel_l2(y, ref):
    y, ref = y.double(), ref.double()
    return float(torch.linalg.vector_norm(y - ref) / torch.linalg.vector_norm(ref))


def main():
    ap = argparse.ArgumentParser(description="the minsub founding problem: eager vs fusedtune")
    ap.add_argument("--db", help="fusedtune database (default: $FUSEDTUNE_DB, else ./fusedtune.db)")
    ap.add_argument("--math", default="fp32", help="fp32 (default), tf32, bf16 or fp16")
    args = ap.parse_args()
    dtype = getattr(torch, fusedtune.math_mode(args.math).dtype)
    torch.manual_seed(0)
    model = Model(in_features, out_features, constant).cuda().to(dtype)
    x = torch.rand(batch_size, in_features, device="cuda", dtype=dtype)
    try:
        new = ModelNew(model, db=args.db, math=args.math)
        with torch.inference_mode():
            y_new = new(x)
    except fusedtune.NotTunedError as e:
        print(e, file=sys.stderr)
        return 3
    plan = new.fused.plan_for(batch_size)
    print(f"library: {fusedtune.library_path}")
    print(f"plan: {plan.config.strategy} {plan.config.name} "
          f"({'exact' if plan.config.exact else 'nearest: tuned at %dx%dx%d' % plan.config.tuned_shape}), "
          f"{args.math}")

    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = args.math == "tf32"  # eager in the same mode
    with torch.inference_mode():
        y_ref = model(x)
        lin = model.linear
        acc = x.double() @ lin.weight.double().T + lin.bias.double()
        y64 = torch.minimum(acc, torch.tensor(constant, dtype=torch.float64, device="cuda")) - constant
        err_new, err_ref, agree = rel_l2(y_new, y64), rel_l2(y_ref, y64), rel_l2(y_new, y_ref)
        t_ref = median_ms(lambda: model(x))
        t_new = median_ms(lambda: new(x))
    torch.backends.cuda.matmul.allow_tf32 = prev
    # fp32: both within 1e-5 of float64; other modes: fused no worse than 2x eager + roundoff.
    tol = 1e-5 if args.math == "fp32" else 2 * err_ref + 2.0 ** -8
    ok = err_new <= tol
    print(f"rel L2 vs float64: ModelNew {err_new:.2e}, Model {err_ref:.2e}; between them {agree:.2e} "
          f"({'ok' if ok else 'MISMATCH'}, tolerance {tol:.1e})")
    print(f"Model (eager) {t_ref:.4f} ms, ModelNew (fusedtune) {t_new:.4f} ms: {t_ref / t_new:.3f}x")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
