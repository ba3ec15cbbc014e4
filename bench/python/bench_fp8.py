"""fp8 (e4m3) layers measured the way users run them, in one process (docs/BENCHMARKS.md): for each
shape, a bf16 nn.Linear with relu(x + bias), x bf16 random normal, W and bias nn.Linear's. Each
candidate is captured as --calls calls into a torch.cuda.CUDAGraph; the graphs are replayed in
interleaved rounds (warm-up first) and the median ms per call is reported:
  mm_bf16       torch.mm(x, W.t()) in bf16
  eager_bf16    F.relu(F.linear(x, W, b)) in bf16 (PyTorch eager of the layer)
  scaled_mm     torch._scaled_mm of pre-quantized e4m3 x and W, per-tensor scales, bf16 out: the
                fp8 GEMM alone (cuBLASLt)
  scaled_row    torch._scaled_mm with row-wise scales (x per token, W per channel) and the bias,
                then relu, on pre-quantized x
  fused_fp8     fusedtune's tuned fp8 kernel, per-token x per-channel scales, bias and relu fused,
                on pre-quantized x (the kernel alone)
  layer_fp8     FusedLinear.from_linear(lin, "relu(x + bias)", math="fp8"): x quantized per token
                by the library's quantizer on every call, then the fused kernel
  quant_x       the library's quantizer alone: x per token into e4m3 codes and fp32 scales (what
                layer_fp8 adds to fused_fp8)
Then eager_bf16 and layer_fp8 call by call (no graph: each call's Python and launches count),
--calls calls between two events, interleaved rounds (bench_torch.interleaved_ms), and the host
microseconds each such call takes (bench_graphs.host_us_best: Python and launches, the GPU's
queue absorbing them; the best of 5 interleaved runs of 200 calls).
Errors (relative L2 against float64 of the bf16 layer): eager bf16, torch per-tensor fp8 (+ bias,
relu in bf16), fusedtune fp8 per-token x per-channel.

    python3 bench/python/bench_fp8.py --db DB [--rounds N] [--calls N] [--shapes MxNxK,...] [--only a,b]

--only keeps the candidates named (e.g. eager_bf16,fused_fp8,layer_fp8,quant_x: another library's
quantizer against the same database, FUSEDTUNE_LIBRARY); the ratios of those left out are not printed.
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

SHAPES = [(16, 14336, 4096), (128, 16384, 16384), (1024, 8192, 8192), (4096, 14336, 4096)]


def graph_of(torch, fn, calls):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    return g


def time_graphs(torch, graphs, rounds, calls):
    ev = {k: [] for k in graphs}
    for g in graphs.values():
        g.replay()
    torch.cuda.synchronize()
    for _ in range(rounds):
        for k, g in graphs.items():
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            ev[k].append(a.elapsed_time(b) / calls)
    return {k: statistics.median(v) for k, v in ev.items()}


def quantize_e4m3(torch, t, per_row=False):
    """t [rows, cols] quantized to e4m3, its largest magnitude (the tensor's, or each row's with
    per_row) at e4m3's 448, as torch._scaled_mm takes it: (codes, fp32 scales: a 0-dim tensor, or
    [rows, 1]). A zero tensor or row gets a tiny scale, so its codes are zeros, never NaN."""
    fmax = torch.finfo(torch.float8_e4m3fn).max
    amax = t.abs().amax(dim=1, keepdim=True) if per_row else t.abs().max().reshape(())
    scale = (amax.float() / fmax).clamp(min=1e-12)
    return (t.float() / scale).clamp(-fmax, fmax).to(torch.float8_e4m3fn), scale


def rel(torch, y, ref):
    y = y.double()
    if not torch.isfinite(y).all():
        return float("inf")
    return float((y - ref).norm() / ref.norm())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--shapes", default="")
    ap.add_argument("--only", default="", help="comma-separated candidates to time (default: all)")
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from fusedtune.torch import FusedLinear
    from fusedtune import Database
    from fusedtune import fp8 as f8
    sys.path.insert(0, HERE)
    from bench_torch import interleaved_ms
    from bench_graphs import host_us_best
    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")] if a.shapes else SHAPES
    torch.manual_seed(0)
    q = f8.Quantizer(Database(a.db, create=True))  # quant_x needs nothing tuned
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {a.rounds} rounds x {a.calls} calls per graph")
    for (m, n, k) in shapes:
        lin = torch.nn.Linear(k, n, bias=True, dtype=torch.bfloat16, device="cuda")
        x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
        w, b = lin.weight.detach(), lin.bias.detach()
        with torch.no_grad():
            ref = torch.relu(x.double() @ w.double().t() + b.double())
        fns, errs = {}, {}
        fns["mm_bf16"] = lambda: torch.mm(x, w.t())
        fns["eager_bf16"] = lambda: F.relu(F.linear(x, w, b))
        errs["eager_bf16"] = rel(torch, F.relu(F.linear(x, w, b)), ref)
        xq, sa = quantize_e4m3(torch, x)
        wq, sb = quantize_e4m3(torch, w)
        fns["scaled_mm"] = lambda: torch._scaled_mm(xq, wq.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        errs["torch_fp8_tensor"] = rel(torch, F.relu(torch._scaled_mm(xq, wq.t(), scale_a=sa, scale_b=sb,
                                                                       out_dtype=torch.bfloat16) + b), ref)
        xqr, sar = quantize_e4m3(torch, x, per_row=True)
        wqr, sbr = quantize_e4m3(torch, w, per_row=True)
        try:
            row = lambda: F.relu(torch._scaled_mm(xqr, wqr.t(), scale_a=sar, scale_b=sbr.t(), bias=b,
                                                  out_dtype=torch.bfloat16))
            errs["torch_fp8_row"] = rel(torch, row(), ref)
            fns["scaled_row"] = row
        except Exception as e:  # noqa: BLE001 - reported, the rest measured
            print(f"  scaled_row: {type(e).__name__}: {e}")
        fxq, fsx = q.quantize(x, per_row=True)
        qxq, qsx = torch.empty_like(fxq), torch.empty_like(fsx)
        fns["quant_x"] = lambda: q.quantize(x, per_row=True, out=qxq, scales=qsx)
        try:
            layer = FusedLinear.from_linear(lin, "relu(x + bias)", math="fp8", db=a.db)
            with torch.no_grad():
                y = layer(x)
            errs["fusedtune_fp8_row"] = rel(torch, y, ref)
            plan = layer.plan_for(m)
            yk = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
            vecs = {"sx": fsx, "sw": layer.weight_scale, "bias": layer.bias}
            fns["fused_fp8"] = lambda: f8.launch_typed(plan, fxq, layer.weight, yk, vecs,
                                                        stream=torch.cuda.current_stream().cuda_stream)
            fns["layer_fp8"] = lambda: layer(x)
            print(f"  {m}x{n}x{k}: fused plan {plan.config.name}")
        except Exception as e:  # noqa: BLE001
            print(f"  fusedtune fp8 at {m}x{n}x{k}: {type(e).__name__}: {e}")
        if a.only:
            fns = {k_: f for k_, f in fns.items() if k_ in a.only.split(",")}
        with torch.no_grad():
            graphs = {k_: graph_of(torch, f, a.calls) for k_, f in fns.items()}
            t = time_graphs(torch, graphs, a.rounds, a.calls)
            by_call = [k_ for k_ in ("eager_bf16", "layer_fp8") if k_ in fns]
            calls = dict(zip(by_call, interleaved_ms([fns[k_] for k_ in by_call], reps=a.rounds, batch=a.calls)))
            host = dict(zip(by_call, host_us_best([fns[k_] for k_ in by_call])))
        line = " ".join(f"{k_} {v:.4f}" for k_, v in t.items())
        print(f"{m}x{n}x{k} ms: {line}")
        if all(k_ in t for k_ in ("scaled_mm", "fused_fp8", "eager_bf16", "layer_fp8", "mm_bf16")):
            print(f"{m}x{n}x{k} ratios: scaled_mm/fused_fp8 {t['scaled_mm'] / t['fused_fp8']:.3f}, "
                  f"eager_bf16/layer_fp8 {t['eager_bf16'] / t['layer_fp8']:.3f}, "
                  f"mm_bf16/fused_fp8 {t['mm_bf16'] / t['fused_fp8']:.3f}, "
                  f"layer_fp8-fused_fp8 {t['layer_fp8'] - t['fused_fp8']:.4f}")
        if calls:
            ratio = calls["eager_bf16"] / calls["layer_fp8"] if "layer_fp8" in calls and "eager_bf16" in calls else None
            print(f"{m}x{n}x{k} call by call ms: " + " ".join(f"{k_} {v:.4f}" for k_, v in calls.items()) +
                  (f", eager_bf16/layer_fp8 {ratio:.3f}" if ratio else "") + "; host us per call: " +
                  " ".join(f"{k_} {v:.1f}" for k_, v in host.items()))
        print(f"{m}x{n}x{k} rel err: " + " ".join(f"{k_} {v:.3g}" for k_, v in errs.items()))


if __name__ == "__main__":
    main()
