"""Two fp8 layers in a row (an MLP's up and down projections, bf16 nn.Linear run in fp8), measured
the way users run them, in one process, with bench_graphs' capture and interleaved timing: the
first layer's output handed to the second as bf16 (the second quantizes it per token on its call)
or as e4m3 codes and row scales (output="e4m3": the first quantizes it, fusedtune.fp8.E4M3Rows,
and the second skips its quantizer). Beside them the bf16 eager pair, F.linear, gelu_tanh,
F.linear. Each is captured as --calls calls into a CUDA graph and replayed in interleaved rounds
(median ms per call), and timed call by call (no graph: what the host adds).

    python3 bench/python/bench_fp8_chain.py --db DB [--rounds N] [--calls N] [--m 16,4096]

The layers: x [M, 4096] -> gelu_tanh(x W1^T + b1) [M, 14336] -> (.) W2^T + b2 [M, 4096]; their
fp8 problems must be tuned in DB (a missing one is reported with its tune command). "e4m3 vs bf16"
= t_bf16_handoff / t_e4m3_handoff (> 1: handing over e4m3 is faster). Exit status: 0 all measured,
3 some not tuned, 1 a failure.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import bench_graphs as bg  # noqa: E402

K, HIDDEN = 4096, 14336
E_UP, E_DOWN = "gelu_tanh(x + bias)", "x + bias"


def per_call_ms(torch, fn, calls):
    """ms per call launched one by one (the host's cost included), median of 5 runs."""
    runs = []
    for _ in range(5):
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        runs.append(s.elapsed_time(e) / calls)
    return sorted(runs)[2]


def measure(args):
    bg._import_torch()
    torch, F = bg.torch, bg.F
    import fusedtune
    from fusedtune.torch import FusedLinear
    print(f"{'M':>5s} {'eager bf16':>10s} {'fp8 bf16>':>10s} {'fp8 e4m3>':>10s} {'e4m3 vs bf16':>12s} "
          f"{'vs eager':>8s} | per call: {'eager':>7s} {'bf16>':>7s} {'e4m3>':>7s}  err eager / bf16> / e4m3>")
    rc = 0
    for m in args.m:
        torch.manual_seed(0)
        up = torch.nn.Linear(K, HIDDEN, device="cuda", dtype=torch.bfloat16).requires_grad_(False)
        down = torch.nn.Linear(HIDDEN, K, device="cuda", dtype=torch.bfloat16).requires_grad_(False)
        x = torch.randn(m, K, device="cuda", dtype=torch.bfloat16)
        try:
            l1 = FusedLinear.from_linear(up, E_UP, math="fp8", db=args.db)
            l1e = FusedLinear.from_linear(up, E_UP, math="fp8", db=args.db, output="e4m3")
            l2 = FusedLinear.from_linear(down, E_DOWN, math="fp8", db=args.db)
            y_bf, y_e = l2(l1(x)), l2(l1e(x))
            torch.cuda.synchronize()
        except fusedtune.NotTunedError as e:
            print(f"{m:5d} not tuned: {e.command}")
            rc = max(rc, 3)
            continue

        def eager():
            return F.linear(F.gelu(F.linear(x, up.weight, up.bias), approximate="tanh"), down.weight, down.bias)

        def bf16_handoff():
            return l2(l1(x))

        def e4m3_handoff():
            return l2(l1e(x))

        ref = F.gelu(x.double() @ up.weight.double().t() + up.bias.double(), approximate="tanh")
        ref = ref @ down.weight.double().t() + down.bias.double()
        errs = [bg.rel_l2(eager(), ref), bg.rel_l2(y_bf, ref), bg.rel_l2(y_e, ref)]
        if not torch.equal(y_bf, y_e):  # the same codes and scales reach the second layer either way
            print(f"{m:5d} the two hand-offs differ: max |d| {(y_bf.float() - y_e.float()).abs().max().item():.3g}")
            rc = 1
        del ref
        torch.cuda.empty_cache()
        fns = (eager, bf16_handoff, e4m3_handoff)
        graphs = [bg.capture(fn, args.calls) for fn in fns]
        t = bg.interleaved_ms([g.replay for g in graphs], args.rounds, args.calls)
        for g in graphs:
            g.reset()
        torch.cuda.empty_cache()
        c = [per_call_ms(torch, fn, args.calls) for fn in fns]
        print(f"{m:5d} {bg.fmt_ms(t[0]):>10s} {bg.fmt_ms(t[1]):>10s} {bg.fmt_ms(t[2]):>10s} "
              f"{bg.fmt_ratio(t[1], t[2]):>12s} {bg.fmt_ratio(t[0], t[2]):>8s} | per call: {c[0]:7.4f} {c[1]:7.4f} "
              f"{c[2]:7.4f}  {errs[0]:.2e} / {errs[1]:.2e} / {errs[2]:.2e}")
        print(f"      configs: up {l1.plan_for(m).config.name}, down {l2.plan_for(m).config.name}")
    return rc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--m", default="16,4096", help="comma-separated row counts (default 16,4096)")
    ap.add_argument("--print-problems", action="store_true",
                    help="print the fp8 problems to tune (shape and epilogue, tab-separated) and exit")
    args = ap.parse_args(argv)
    args.m = [int(v) for v in args.m.split(",")]
    if args.print_problems:
        from fusedtune.fp8 import fp8_epilogue
        for m in args.m:
            print(f"{m}x{HIDDEN}x{K}\t{fp8_epilogue(E_UP)}")
            print(f"{m}x{K}x{HIDDEN}\t{fp8_epilogue(E_DOWN)}")
        return 0
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
