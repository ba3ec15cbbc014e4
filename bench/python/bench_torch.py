"""FusedLinear against eager PyTorch on the two seed problems, in one process: a short table of
median times (CUDA events, interleaved) and errors vs float64. "synced": each call timed alone
after a synchronization (50 rounds), so the call's host cost before its first kernel counts;
"pipelined": 20 calls back to back per timing (15 rounds), the GPU's time per call when the
host runs ahead; "host us": host microseconds per call.

    python3 bench/python/bench_torch.py --db DB [--math fp32,tf32,bf16,fp16 | all]

Tune first, for each mode M asked for (exact shapes; a missing one is reported with the command
that tunes it, and the row skipped):
    fusedtune --db DB tune --shape 128x16384x16384 --epilogue minsub --math M
    fusedtune --db DB tune --shape 1024x8192x8192 --epilogue biasrelu --math M
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import fusedtune  # noqa: E402
from fusedtune.torch import FusedLinear  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_graphs  # noqa: E402  (host_us)

bench_graphs._import_torch()

# (name, m, n, k, expression, eager PyTorch, float64 reference on the GEMM result + bias)
PROBLEMS = [
    ("minsub", 128, 16384, 16384, "min(x + bias, c) - c where c = 2",
     lambda lin, x: torch.clamp(lin(x), max=2.0) - 2.0,  # no per-call host-to-device scalar copy
     lambda v: torch.minimum(v, torch.tensor(2.0, dtype=v.dtype, device=v.device)) - 2.0),
    ("biasrelu", 1024, 8192, 8192, "relu(x + bias)", lambda lin, x: F.relu(lin(x)), torch.relu),
]


def rel_l2(y, ref):
    y, ref = y.double(), ref.double()
    if not torch.isfinite(y).all():
        return float("inf")
    return float(torch.linalg.vector_norm(y - ref) / torch.linalg.vector_norm(ref))


def interleaved_ms(fns, reps=50, batch=1):
    """Median ms per call of each fn, timed in turn (a, b, a, b, ...) so drift hits both alike.
    batch 1: each call timed alone after a synchronization (the launch's CPU cost is on the
    clock, as in a latency-bound loop); batch > 1: that many calls back to back per timing, the
    CPU running ahead of the GPU (the GPU's time per call, as in a pipelined model)."""
    for _ in range(5):
        for fn in fns:
            fn()
    times = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            s.record()
            for _ in range(batch):
                fn()
            e.record()
            e.synchronize()
            times[i].append(s.elapsed_time(e) / batch)
    return [sorted(t)[reps // 2] for t in times]


def main():
    ap = argparse.ArgumentParser(description="FusedLinear vs eager PyTorch on the seed problems")
    ap.add_argument("--db", help="tuned database (default: $FUSEDTUNE_DB, else ./fusedtune.db)")
    ap.add_argument("--math", default="fp32", help="comma-separated modes, or all (default fp32)")
    args = ap.parse_args()
    modes = list(fusedtune.math_modes()) if args.math == "all" else args.math.split(",")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {fusedtune.library.describe()}")
    print(f"{'':32s} {'synced (ms)':^28s} {'pipelined (ms)':^28s} {'host us':^13s}")
    print(f"{'problem':9s} {'shape':16s} {'math':5s} {'eager':>9s} {'fused':>9s} {'speedup':>8s} "
          f"{'eager':>9s} {'fused':>9s} {'speedup':>8s} {'eager':>6s} {'fused':>6s} "
          f"{'eager err':>9s} {'fused err':>9s}  configuration")
    missing = 0
    for name, m, n, k, text, eager, ref_fn in PROBLEMS:
        for mode_name in modes:
            mode = fusedtune.math_mode(mode_name)
            dtype = getattr(torch, mode.dtype)
            torch.manual_seed(0)
            lin = torch.nn.Linear(k, n, device="cuda", dtype=dtype)
            x = torch.rand(m, k, device="cuda", dtype=dtype)
            layer = FusedLinear.from_linear(lin, text, math=mode.name, db=args.db, nearest=False)
            shape = f"{m}x{n}x{k}"
            try:
                with torch.inference_mode():
                    y = layer(x)
            except fusedtune.NotTunedError as e:
                print(f"{name:9s} {shape:16s} {mode.name:5s} not tuned: {e.command}")
                missing += 1
                continue
            prev = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = mode.name == "tf32"
            with torch.inference_mode():
                y_eager = eager(lin, x)
                ref = ref_fn(x.double() @ lin.weight.double().T + lin.bias.double())
                fns = [lambda: eager(lin, x), lambda: layer(x)]
                t_eager, t_fused = interleaved_ms(fns)
                p_eager, p_fused = interleaved_ms(fns, reps=15, batch=20)
                c_eager, c_fused = bench_graphs.host_us(fns[0]), bench_graphs.host_us(fns[1])
            torch.backends.cuda.matmul.allow_tf32 = prev
            cfg = layer.plan_for(m).config
            print(f"{name:9s} {shape:16s} {mode.name:5s} {t_eager:9.4f} {t_fused:9.4f} {t_eager / t_fused:7.3f}x "
                  f"{p_eager:9.4f} {p_fused:9.4f} {p_eager / p_fused:7.3f}x {c_eager:6.1f} {c_fused:6.1f} "
                  f"{rel_l2(y_eager, ref):9.2e} {rel_l2(y, ref):9.2e}  {cfg.strategy} {cfg.name}")
    return 3 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
