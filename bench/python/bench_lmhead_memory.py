"""The LM head's normalizer, logsumexp(x W^T + b) over a vocabulary, in one process: time and
peak extra device memory of torch.mm alone, eager `torch.logsumexp(F.linear(x, W, b).float(), 1)`,
torch.compile of the same (default mode) and FusedLinear(epilogue="logsumexp(x + bias)") with the
stored best of a tune. Times: CUDA graphs of --calls calls, replayed in interleaved rounds
(bench_graphs.interleaved_ms), median ms per call. Memory: for the torch forms, the peak of
torch.cuda.max_memory_allocated over one call beyond what was allocated before it; for
FusedLinear, whose plan allocates its workspace outside torch (cudaMalloc), the fall of
torch.cuda.mem_get_info's free bytes across its first call (plan and workspace), plus torch's
peak over a later call (y). The logits' size (M x N elements of the dtype) is printed beside.

    python3 bench/python/bench_lmhead_memory.py --db DB [--shape 8192x128256x4096] [--math bf16]
                                                [--rounds N] [--calls N] [--no-compile]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)


def main(argv=None):
    ap = argparse.ArgumentParser(description="LM head logsumexp: time and peak extra memory")
    ap.add_argument("--db", required=True)
    ap.add_argument("--shape", default="8192x128256x4096")
    ap.add_argument("--math", default="bf16", choices=["bf16", "fp16"])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    args = ap.parse_args(argv)
    m, n, k = (int(v) for v in args.shape.split("x"))
    import torch
    import torch.nn.functional as F
    import bench_graphs
    from fusedtune.torch import FusedLinear
    bench_graphs.torch, bench_graphs.F = torch, F
    dtype = torch.bfloat16 if args.math == "bf16" else torch.float16
    torch.manual_seed(0)
    with torch.no_grad():
        lin = torch.nn.Linear(k, n, device="cuda", dtype=dtype).requires_grad_(False)
        x = torch.randn(m, k, device="cuda", dtype=dtype)
        w, b = lin.weight, lin.bias
        logits_bytes = m * n * x.element_size()

        def mm():
            return torch.mm(x, w.t())

        def eager():
            return torch.logsumexp(F.linear(x, w, b).float(), 1)

        forms = [("torch.mm alone", mm), ("eager logsumexp", eager)]
        if not args.no_compile:
            forms.append(("torch.compile", torch.compile(eager)))
        free0 = torch.cuda.mem_get_info()[0]
        layer = FusedLinear.from_linear(lin, "logsumexp(x + bias)", math=args.math, db=args.db, nearest=False)
        y = layer(x)
        torch.cuda.synchronize()
        plan_bytes = free0 - torch.cuda.mem_get_info()[0]
        forms.append(("fusedtune", lambda: layer(x)))
        ref = torch.logsumexp(x.double() @ w.double().t() + b.double(), 1)
        err = float(torch.linalg.vector_norm(y.double() - ref) / torch.linalg.vector_norm(ref))
        err_eager = float(torch.linalg.vector_norm(eager().double() - ref) / torch.linalg.vector_norm(ref))
        del ref
        torch.cuda.empty_cache()
        peaks = []
        for name, fn in forms:
            fn()  # compiled and warm before its peak is read
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            out = fn()
            torch.cuda.synchronize()
            peaks.append(torch.cuda.max_memory_allocated() - base)
            del out
        graphs = [bench_graphs.capture(fn, args.calls) for _, fn in forms]
        ms = bench_graphs.interleaved_ms([g.replay for g in graphs], args.rounds, args.calls)
    t_mm, t_eager = ms[0], ms[1]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; {args.shape} {args.math}; logits "
          f"{logits_bytes / 2**30:.3f} GiB; CUDA graphs of {args.calls} calls, median of {args.rounds} rounds")
    print(f"{'':18s} {'ms':>9s} {'vs mm':>7s} {'vs eager':>8s} {'peak extra MiB':>15s} {'of logits':>9s}")
    for (name, _), t, peak in zip(forms, ms, peaks):
        extra = peak + (plan_bytes if name == "fusedtune" else 0)
        print(f"{name:18s} {t:9.3f} {t_mm / t:7.3f} {t_eager / t:8.3f} {extra / 2**20:15.1f} "
              f"{100.0 * extra / logits_bytes:8.2f}%")
    print(f"fusedtune: {layer.plan_for(m).config.name}; plan + workspace {plan_bytes / 2**20:.1f} MiB "
          f"(free memory's fall at the first call); rel L2 error vs float64 {err:.2e} (eager {err_eager:.2e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
