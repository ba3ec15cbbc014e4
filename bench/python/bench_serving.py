"""FusedLinear on the serving layers of issue 42 (a Llama-3-8B-like MLP and projections, bf16),
in one process, against eager PyTorch (F.linear, then the epilogue's torch ops):
  synced     each call timed alone after a synchronization (the call's host cost is on the clock)
  pipelined  --calls calls back to back per timing (the host running ahead: call by call, no graphs)
  host us    host microseconds per call, F.linear alone, eager and FusedLinear (200 calls, then a
             sync; the best of 5 such runs, interleaved)
  graphs     --calls calls captured into a CUDAGraph each, replayed
Interleaved rounds, median ms per call, "x" = eager / fused (> 1: FusedLinear faster). Then, with
--sweep, the M sweep: FusedLinear(4096 -> 14336, 'silu(x)') at each M of --ms against float64,
with the configuration (M bucket) that served it; an error above 2x eager's + 2^-8 fails.

    python3 bench/python/bench_serving.py --db DB [--only NAME,...] [--rounds N] [--calls N] [--sweep]

Tune first (the commands a missing problem prints):
    fusedtune --db DB tune --math bf16 --shape 1..4096x14336x4096 --epilogue 'silu(x)'
    fusedtune --db DB tune --math bf16 --shape 16x4096x14336 --epilogue x
    fusedtune --db DB tune --math bf16 --shape 64x6144x4096 --epilogue 'x + bias'
Exit status: 0 all measured and the sweep correct; 3 some not tuned; 1 a failure.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import bench_graphs as bg  # noqa: E402  (capture, interleaved_ms, pipelined, rel_l2, host_us)

# name, m, n, k, expression, eager epilogue on y = F.linear(x, W[, b])
PROBLEMS = [
    ("silu1", 1, 14336, 4096, "silu(x)", "silu"),
    ("silu16", 16, 14336, 4096, "silu(x)", "silu"),
    ("x16", 16, 4096, 14336, "x", None),
    ("bias64", 64, 6144, 4096, "x + bias", None),
    ("silu4k", 4096, 14336, 4096, "silu(x)", "silu"),
]
SWEEP_MS = "1,3,17,100,1000,5000,8192"


def measure(args, name, m, n, k, expr, post, FusedLinear, fusedtune):
    bias = "bias" in expr
    torch.manual_seed(0)
    lin = torch.nn.Linear(k, n, bias=bias, device="cuda", dtype=torch.bfloat16).requires_grad_(False)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    layer = FusedLinear.from_linear(lin, expr, math="bf16", db=args.db, nearest=False)
    w, b = lin.weight, lin.bias
    act = F.silu if post == "silu" else (lambda v: v)
    head = f"{name:7s} {m}x{n}x{k:<6d} {expr:9s}"
    try:
        y = layer(x)
    except fusedtune.NotTunedError as e:
        return "missing", f"{head} not tuned: {e.command}"
    cfg = layer.config_for(m)
    linear = (lambda: F.linear(x, w, b)) if bias else (lambda: F.linear(x, w))

    def eager():
        return act(linear())

    def fused():
        return layer(x)

    ref = x.double() @ w.double().t()
    if bias:
        ref += b.double()
    ref = act(ref)
    err_e, err_f = bg.rel_l2(eager(), ref), bg.rel_l2(y, ref)
    del ref, y
    s_e, s_f = bg.interleaved_ms([eager, fused], args.rounds, 1)
    p_e, p_f = bg.interleaved_ms([bg.pipelined(eager, args.calls), bg.pipelined(fused, args.calls)], args.rounds,
                                 args.calls)
    h_lin, h_e, h_f = bg.host_us_best([linear, eager, fused])
    graphs = [bg.capture(eager, args.calls), bg.capture(fused, args.calls)]
    g_e, g_f = bg.interleaved_ms([g.replay for g in graphs], args.rounds, args.calls)
    for g in graphs:
        g.reset()
    how = "exact" if cfg.exact else f"bucket {cfg.tuned_m}" if cfg.bucket else "nearest"
    line = (f"{head} {s_e:8.4f} {s_f:8.4f} {s_e / s_f:6.3f}x {p_e:8.4f} {p_f:8.4f} {p_e / p_f:6.3f}x "
            f"{h_lin:6.1f} {h_e:6.1f} {h_f:6.1f} {g_e:8.4f} {g_f:8.4f} {g_e / g_f:6.3f}x "
            f"{err_e:8.1e} {err_f:8.1e}  {cfg.strategy} {cfg.name} ({how})")
    return ("ok" if err_f <= 2 * err_e + 2 ** -8 else "fail"), line


def sweep(args, FusedLinear, fusedtune):
    """FusedLinear(4096 -> 14336, 'silu(x)') at each M against float64: the M buckets of one tune."""
    torch.manual_seed(1)
    lin = torch.nn.Linear(4096, 14336, bias=False, device="cuda", dtype=torch.bfloat16).requires_grad_(False)
    layer = FusedLinear.from_linear(lin, "silu(x)", math="bf16", db=args.db, nearest=False)
    bad = 0
    print("M sweep, FusedLinear(4096 -> 14336, 'silu(x)') bf16, against float64:")
    for m in (int(v) for v in args.ms.split(",")):
        x = torch.randn(m, 4096, device="cuda", dtype=torch.bfloat16)
        try:
            torch.full((m * 14336,), float("nan"), dtype=torch.bfloat16, device="cuda")  # freed: NaN in the cache
            y = layer(x)
        except fusedtune.FusedtuneError as e:
            print(f"  M={m:<5d} FAIL {type(e).__name__}: {e}")
            bad += 1
            continue
        ref = F.silu(x.double() @ lin.weight.double().t())
        err_f, err_e = bg.rel_l2(y, ref), bg.rel_l2(F.silu(F.linear(x, lin.weight)), ref)
        ok = err_f <= 2 * err_e + 2 ** -8
        bad += not ok
        cfg = layer.config_for(m)
        how = "exact" if cfg.exact else f"bucket M={cfg.tuned_m}" if cfg.bucket else "NEAREST"
        print(f"  M={m:<5d} {'ok  ' if ok else 'FAIL'} rel {err_f:.2e} (eager {err_e:.2e})  {how:14s} "
              f"{cfg.strategy} {cfg.name}")
        del ref, y, x
        torch.cuda.empty_cache()
    return bad


def main():
    global torch, F
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True, help="the tuned database")
    ap.add_argument("--only", help="comma-separated names: " + ",".join(p[0] for p in PROBLEMS))
    ap.add_argument("--rounds", type=int, default=20, help="interleaved rounds per timing (default 20)")
    ap.add_argument("--calls", type=int, default=20, help="calls per graph and pipelined timing (default 20)")
    ap.add_argument("--sweep", action="store_true", help="also the M sweep's correctness")
    ap.add_argument("--ms", default=SWEEP_MS, help=f"the sweep's Ms (default {SWEEP_MS})")
    args = ap.parse_args()
    bg._import_torch()
    torch, F = bg.torch, bg.F
    import fusedtune
    from fusedtune import _launch
    from fusedtune.torch import FusedLinear
    only = set(args.only.split(",")) if args.only else None
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {fusedtune.library.describe()}, "
          f"launch path {_launch.use()} {_launch.WHY}")
    print(f"{'':33s} {'synced ms (1 call)':^24s} {'pipelined ms (' + str(args.calls) + ' calls)':^24s} "
          f"{'host us per call':^20s} {'CUDA graphs ms':^24s} {'rel err':^17s}")
    print(f"{'layer':7s} {'shape':16s} {'E':9s} {'eager':>8s} {'fused':>8s} {'x':>7s} {'eager':>8s} {'fused':>8s} "
          f"{'x':>7s} {'linear':>6s} {'eager':>6s} {'fused':>6s} {'eager':>8s} {'fused':>8s} {'x':>7s} "
          f"{'eager':>8s} {'fused':>8s}  configuration")
    counts = {"ok": 0, "missing": 0, "fail": 0}
    with torch.inference_mode():
        for name, m, n, k, expr, post in PROBLEMS:
            if only and name not in only:
                continue
            try:
                status, line = measure(args, name, m, n, k, expr, post, FusedLinear, fusedtune)
            except Exception as e:  # noqa: BLE001 -- the row fails, the run goes on
                status, line = "fail", f"{name:7s} {type(e).__name__}: {str(e).splitlines()[0][:200]}"
            counts[status] += 1
            print(line, flush=True)
            torch.cuda.empty_cache()
        bad = sweep(args, FusedLinear, fusedtune) if args.sweep else 0
    return 1 if counts["fail"] or bad else 3 if counts["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
