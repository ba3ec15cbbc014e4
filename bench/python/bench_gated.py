"""Gated pairs (SwiGLU halves, silu(x W1^T) * (x W2^T)) measured the way users run them, in one
process, as bench/python/bench_graphs.py measures one-weight layers (its capture and interleaved
timing): each of three things captured as --calls calls into a CUDA graph, the graphs replayed in
interleaved rounds, the median ms per call over --rounds rounds:
  stacked  torch.mm(x, W.t()) of the stacked [2N, K] weight alone (the GEMM a fused pair must match)
  eager    F.silu(F.linear(x, W1)) * F.linear(x, W2): two GEMMs, then silu and the product
  fused    FusedLinear.from_gated(gate, up, "silu(x) * x2") with the stored best of a tune
With --math fp8 the layers are bf16 (eager is the bf16 pair), "stacked" is torch._scaled_mm of the
stacked weight and x, both quantized to e4m3 beforehand with per-tensor scales (the fp8 GEMM alone,
cuBLASLt), and fused is FusedLinear.from_gated(..., math="fp8"): x quantized per token on each call,
each weight per output channel (issue 56's fp8 SwiGLU half).
"vs stacked" = t_stacked / t_fused, "vs eager" = t_eager / t_fused (> 1: fused is faster); the
relative L2 errors of eager and fused against float64.

    python3 bench/python/bench_gated.py --db DB [--math bf16|fp16|fp8|default] [--rounds N] [--calls N]

A shape not tuned is reported with its tune command. Exit status: 0 all rows measured, 3 some not
tuned, 1 a failure.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import bench_graphs as bg  # noqa: E402
from bench_fp8 import quantize_e4m3  # noqa: E402

SHAPES = [("swi16", 16, 14336, 4096), ("swi4k", 4096, 14336, 4096)]
EXPR = "silu(x) * x2"


def measure(args):
    bg._import_torch()
    torch, F = bg.torch, bg.F
    import fusedtune
    from fusedtune.torch import FusedLinear
    fp8 = args.math == "fp8"
    dtype = torch.bfloat16 if fp8 else getattr(torch, bg.MODES[args.math])
    print(f"{'problem':9s} {'shape':17s} {'mode':7s} {'stacked':>9s} {'eager':>9s} {'fused':>9s} {'vs stacked':>10s} "
          f"{'vs eager':>9s}  err eager / fused   config")
    rc = 0
    for name, m, n, k in SHAPES:
        torch.manual_seed(0)
        gate = torch.nn.Linear(k, n, bias=False, device="cuda", dtype=dtype).requires_grad_(False)
        up = torch.nn.Linear(k, n, bias=False, device="cuda", dtype=dtype).requires_grad_(False)
        x = torch.randn(m, k, device="cuda", dtype=dtype)
        w1, w2 = gate.weight, up.weight
        stacked_w = torch.cat([w1, w2])
        math = None if args.math == "default" else args.math
        layer = FusedLinear.from_gated(gate, up, EXPR, math=math, db=args.db, nearest=False)
        head = f"{name:9s} {m}x{n}x{k:<7d} {args.math:7s}"
        try:
            y = layer(x)
            torch.cuda.synchronize()
        except fusedtune.NotTunedError as e:
            print(f"{head} not tuned: {e.command}")
            rc = max(rc, 3)
            continue
        cfg = layer.plan_for(m).config

        if fp8:  # the fp8 GEMM alone: operands quantized beforehand, one scale each
            xq, sa = quantize_e4m3(torch, x)
            wq, sb = quantize_e4m3(torch, stacked_w)

            def stacked():
                return torch._scaled_mm(xq, wq.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        else:
            def stacked():
                return torch.mm(x, stacked_w.t())

        def eager():
            return F.silu(F.linear(x, w1)) * F.linear(x, w2)

        def fused():
            return layer(x)

        ref = F.silu(x.double() @ w1.double().t()) * (x.double() @ w2.double().t())
        err_eager, err_fused = bg.rel_l2(eager(), ref), bg.rel_l2(y, ref)
        del ref, y
        torch.cuda.empty_cache()
        graphs = [bg.capture(fn, args.calls) for fn in (stacked, eager, fused)]
        t_s, t_e, t_f = bg.interleaved_ms([g.replay for g in graphs], args.rounds, args.calls)
        for g in graphs:
            g.reset()
        torch.cuda.empty_cache()
        if err_fused == float("inf"):
            rc = 1
        print(f"{head} {bg.fmt_ms(t_s)} {bg.fmt_ms(t_e)} {bg.fmt_ms(t_f)} {bg.fmt_ratio(t_s, t_f):>10s} "
              f"{bg.fmt_ratio(t_e, t_f):>9s}  {err_eager:.2e} / {err_fused:.2e}   {cfg.name}")
    return rc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--math", default="bf16", choices=["bf16", "fp16", "fp8", "default"],
                    help="default: fp32 tensors and no math, as an fp32 model is served (3xtf32 or fp32, the "
                         "faster within SGEMM's error); the tune: `tune` without --math. fp8: bf16 layers served "
                         "in e4m3 (the tune: --math fp8 of fusedtune.fp8.fp8_epilogue's text)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args(argv)
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
