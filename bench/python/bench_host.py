"""Host microseconds per call of a FusedLinear layer, by launch path, against F.linear (issue 54 item 5:
"host us per call <= F.linear's for every plan kind"). For each row, interleaved runs of --calls calls
back to back (synchronized before and after; the GPU's queue absorbs them), the best run of --runs:
  F.linear    F.linear(x, W, b) (the function: no module; the GEMM alone, also for a row whose
              FusedLinear adds a matrix), Linear the nn.Linear module's call
  python      FusedLinear's forward through Python (the compiled _fusedtune_ext, else ctypes)
  native      FusedLinear's forward through fusedtune::linear's C++ implementation (one call)
  op          torch.ops.fusedtune.linear called directly (the native path without nn.Module)
"x mod" = native / Linear (module call against module call) and "x fn" = op / F.linear (the bare
calls); <= 1: the target met. Each row names the plan that serves it (its
strategy: a fused kernel, cuBLAS(Lt) + a pass, fp8 with the quantizer) and checks that a call
stays in C++ (_native.fallback()) with the python path's output (equal bits: one plan).

    python3 bench/python/bench_host.py --db DB [--tune] [--only NAME,...] [--calls N] [--runs N]

--tune tunes what DB lacks first (--budget seconds each; a writable DB); without it a missing
problem prints its tune command and is skipped. Needs a build with the C++ operator (CMake where
python3 imports torch): fusedtune.torch.op.native_op_status() is printed first.
Exit status: 0 every row measured; 3 some not tuned; 1 a failure (no C++ operator, a mismatch).
"""
import argparse
import os
import sys


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

# name, M, N, K, epilogue, math, per-call matrix operand: decode and small layers, where host cost
# shows (issue 54: cuBLAS(Lt) + pass and fp8 layers paid Python host cost above F.linear).
ROWS = [
    ("bias16", 16, 4096, 4096, "x + bias", "bf16", False),
    ("silu16", 16, 14336, 4096, "silu(x)", "bf16", False),
    ("minsub128", 128, 4096, 4096, "min(x + bias, c) - c where c = 2", "bf16", False),
    ("resid16", 16, 4096, 4096, "x + bias + r where mat r", "bf16", True),
    ("relu_f32", 128, 1024, 1024, "relu(x + bias)", "fp32", False),
    ("fp8_16", 16, 4096, 4096, "relu(x + bias)", "fp8", False),
    ("fp8resid16", 16, 4096, 4096, "x + bias + r where mat r", "fp8", True),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--tune", action="store_true", help="tune what the database lacks first")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per tune (with --tune)")
    ap.add_argument("--only", default="", help="row names, comma-separated")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()

    import torch
    import torch.nn.functional as F
    import bench_graphs
    bench_graphs._import_torch()  # its host_us reads the module-level torch
    host_us = bench_graphs.host_us
    import fusedtune
    from fusedtune.torch import FusedLinear, _native, op as torch_op
    status = torch_op.native_op_status()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}; {status}; {a.calls} calls x best of {a.runs}")
    if not status.startswith("native"):
        print("the C++ operator is not in use: build fusedtune with CMake where python3 imports torch")
        return 1
    rc = 0
    print(f"{'row':11s} {'plan':38s} {'F.linear':>8s} {'Linear':>8s} {'python':>8s} {'native':>8s} {'op':>8s} "
          f"{'x mod':>7s} {'x fn':>7s}")
    for name, m, n, k, expr, math, mat in ROWS:
        if a.only and name not in a.only.split(","):
            continue
        torch.manual_seed(0)
        dtype = torch.float32 if math == "fp32" else torch.bfloat16
        lin = torch.nn.Linear(k, n, bias="bias" in expr, dtype=dtype, device="cuda")  # E without bias: a layer without
        x = torch.randn(m, k, dtype=dtype, device="cuda")
        r = torch.randn(m, n, dtype=dtype, device="cuda") if mat else None
        kw = {"r": r} if mat else {}
        autotune = {"budget_s": a.budget} if a.tune else False
        try:
            if math == "fp8":
                if a.tune:  # an fp8 layer looks up only: tune its problem as the CLI would
                    from fusedtune import fp8 as f8
                    with fusedtune.Database(a.db, create=True) as db:
                        p = fusedtune.Problem(m, n, k, f8.fp8_epilogue(expr), "fp8")
                        try:
                            db.lookup(p)
                        except fusedtune.NotFoundError:
                            db.tune(p, budget_s=a.budget)
                layer = FusedLinear.from_linear(lin, expr, math="fp8", db=a.db)
            else:
                # fp32 tensors at fp32 accuracy (fp32 or 3xtf32, whichever the database says is faster).
                layer = FusedLinear.from_linear(lin, expr, math=None if math == "fp32" else math, db=a.db, nearest=False,
                                                autotune=autotune)
            with torch.inference_mode():
                _native.use(False)
                y_py = layer(x, **kw)
                _native.use(True)
                layer(x, **kw)  # the first call of an M resolves its plan in Python and notes it for C++
                y_nat = layer(x, **kw)
                why = _native.fallback()
        except fusedtune.NotTunedError as e:
            print(f"{name:11s} not tuned: {e.command}")
            rc = rc or 3
            continue
        plan = layer.plan_for(m)
        if why or not torch.equal(y_py, y_nat):
            print(f"{name:11s} FAIL: " + (f"the call went to Python ({why})" if why else
                                          "the native path's output differs from the python path's"))
            rc = 1
            continue
        w, b = lin.weight.detach(), (lin.bias.detach() if lin.bias is not None else None)
        if math == "fp8":
            w_op, (operands, scalars, _keys) = layer.weight, layer._op_operands(kw)
        else:
            w_op = layer.weight
            operands = [t for nm, kind, _ in layer._slots if kind != "scalar"
                        for t in [kw[nm] if nm in kw else getattr(layer, nm)]]
            scalars = [float(layer._binding.scalars.get(nm, d)) for nm, kind, d in layer._slots if kind == "scalar"]
        op = torch.ops.fusedtune.linear.default._op
        h = layer.op_handle
        # The python path switches off the C++ operator once per run, not per call.
        fns = {"F.linear": lambda: F.linear(x, w, b), "Linear": lambda: lin(x),
               "python": None, "native": lambda: layer(x, **kw), "op": lambda: op(x, w_op, operands, scalars, h)}
        best = {k_: float("inf") for k_ in fns}
        with torch.inference_mode():
            for _ in range(a.runs):
                for k_, fn in fns.items():
                    if k_ == "python":
                        _native.use(False)
                        try:
                            best[k_] = min(best[k_], host_us(lambda: layer(x, **kw), a.calls))
                        finally:
                            _native.use(True)
                    else:
                        best[k_] = min(best[k_], host_us(fn, a.calls))
        served = f"{plan.config.strategy} {plan.config.name}"[:38]
        print(f"{name:11s} {served:38s} " + " ".join(f"{best[k_]:8.2f}" for k_ in fns) +
              f" {best['native'] / best['Linear']:6.3f}x {best['op'] / best['F.linear']:6.3f}x")
    return rc


if __name__ == "__main__":
    sys.exit(main())
