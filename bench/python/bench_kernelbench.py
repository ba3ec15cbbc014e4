"""Whole models through fusedtune.torch, measured the way KernelBench's harness measures them.

For each problem file of a KernelBench checkout (a `Model` class with `get_inputs()` and
`get_init_inputs()`, used as published: nothing fusedtune-specific in it), in one process:
  eager    the model as its authors wrote it (built under torch.no_grad(), never put in eval mode,
           as KernelBench's harness leaves it: BatchNorm uses the batch's statistics);
  compile  torch.compile(model) (default mode);
  fused    fusedtune.torch.fuse(model, *inputs, db=DB): each captured GEMM + epilogue served by
           the database's tuned best (fp32 tensors at fp32 accuracy: 3xtf32 where it is faster
           and within SGEMM's error), the rest left to PyTorch;
  backend  (--backend) torch.compile(model, backend=fusedtune.torch.backend(db=DB)): the same
           layers, the rest of the graph compiled by Inductor (attention, say).
Timing as KernelBench's `cuda_event` method: 3 warm-up calls, then per trial a synchronize, 256 MB
written to push the inputs out of L2, CUDA events around one call, a synchronize; the first trial
discarded; --trials trials (default 100); the three variants take turns trial by trial, so clock
drift hits them alike. Speed-up = mean(eager) / mean(other). Correctness is KernelBench's rule:
torch.allclose(out, eager's out, atol=rtol=tol), tol 1e-4 in fp32 and 1e-2 in bf16/fp16, on
--checks fresh random inputs; beside it, each one's largest error against the model run in float64
(eager's own fp32 error can exceed that rule's atol where a row sum cancels).

    python3 bench/python/bench_kernelbench.py --kb DIR [--db DB] [--dtype fp32|bf16|fp16]
        [--only 12,68] [--tune] [--budget S] [--trials N] [--no-compile] [--backend] [--graphs]

DIR holds the problem files (e.g. KernelBench/level2; not part of this repository). --tune tunes
what the database lacks first (fusedtune.torch.tune); without it a problem not tuned is reported
with its tune command and skipped. Exit status 0 when every measured problem was correct.
"""
import argparse
import copy
import importlib.util
import math
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

DTYPES = {"fp32": ("float32", 1e-4), "bf16": ("bfloat16", 1e-2), "fp16": ("float16", 1e-2)}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="KernelBench models: eager, torch.compile and fusedtune.torch.fuse")
    ap.add_argument("--kb", required=True, help="folder of KernelBench problem files (e.g. KernelBench/level2)")
    ap.add_argument("--db", default=os.environ.get("FUSEDTUNE_DB", "fusedtune.db"), help="database (default $FUSEDTUNE_DB)")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    ap.add_argument("--only", default="", help="comma-separated problem numbers (the file name's prefix)")
    ap.add_argument("--tune", action="store_true", help="tune what the database lacks first")
    ap.add_argument("--budget", type=float, default=60.0, help="tune budget per problem, seconds")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--checks", type=int, default=3, help="fresh random inputs checked with allclose")
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    ap.add_argument("--backend", action="store_true",
                    help="also time torch.compile with fusedtune's backend (fused layers, the rest by Inductor)")
    ap.add_argument("--graphs", action="store_true",
                    help="each variant captured in a CUDA graph and the graph replayed (no host cost), timed the same way")
    args = ap.parse_args(argv)
    if args.trials < 3:
        ap.error("--trials must be at least 3")
    return args


def problem_files(folder, only):
    want = {s.strip() for s in only.split(",") if s.strip()}
    out = []
    for name in sorted(os.listdir(folder), key=lambda n: int(re.match(r"(\d+)", n).group(1)) if re.match(r"\d+", n) else 0):
        m = re.match(r"(\d+)_.*\.py$", name)
        if m and (not want or m.group(1) in want):
            out.append(os.path.join(folder, name))
    return out


def load(path):
    spec = importlib.util.spec_from_file_location("kb_" + os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kb_times(torch, fns, trials, host=None):
    """Mean ms per call of each fn, KernelBench's way, the fns taking turns trial by trial; host (a
    list) gets each fn's median host µs per call: from the call to its return, the GPU still busy
    with the flush, so the time a call's launches take on the host, which the events see only
    where it exceeds the GPU work queued ahead."""
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.float32, device="cuda")
    for fn in fns:
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    times = [[] for _ in fns]
    spent = [[] for _ in fns]
    for t in range(trials):
        for i, fn in enumerate(fns):
            torch.cuda.synchronize()
            flush.fill_(float(t))
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            h0 = time.perf_counter()
            fn()
            h1 = time.perf_counter()
            b.record()
            torch.cuda.synchronize()
            if t > 0:
                times[i].append(a.elapsed_time(b))
                spent[i].append(1e6 * (h1 - h0))
    if host is not None:
        host[:] = [sorted(v)[len(v) // 2] for v in spent]
    return [sum(v) / len(v) for v in times]


def as_graph(torch, fn):
    """fn captured in a CUDA graph (after warm-up on a side stream, as PyTorch's docs do): its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def served_by(fused):
    """The modes and strategies of the plans the fused model's layers ran ("3xtf32 fused", ...)."""
    from fusedtune.torch import FusedLinear
    seen = set()
    for m in fused.modules():
        if isinstance(m, FusedLinear):
            for plan in m._plans.values():
                seen.add(f"{plan.config.math} {'fused' if plan.config.strategy == 'fused' else 'pass'}")
    return ",".join(sorted(seen)) or "-"


def main(argv=None):
    args = parse_args(argv)
    import torch
    import fusedtune.torch as ftt

    dtype_name, tol = DTYPES[args.dtype]
    dtype = getattr(torch, dtype_name)
    rows, bad = [], 0
    for path in problem_files(args.kb, args.only):
        name = os.path.basename(path)[:-3]
        mod = load(path)
        torch.manual_seed(0)
        with torch.no_grad():
            model = mod.Model(*mod.get_init_inputs()).cuda().to(dtype)
            inputs = [t.cuda().to(dtype) if torch.is_tensor(t) and t.is_floating_point() else
                      (t.cuda() if torch.is_tensor(t) else t) for t in mod.get_inputs()]
            row = {"name": name}
            try:
                t0 = time.time()
                if args.tune:
                    ftt.tune(model, *inputs, db=args.db, budget_s=args.budget)
                row["tune_s"] = time.time() - t0
                fused = ftt.fuse(model, *inputs, db=args.db)
            except Exception as e:  # noqa: BLE001 -- reported per problem, the run goes on
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
                rows.append(row)
                print(f"{name}: {row['error']}", flush=True)
                continue
            ok = True
            model64 = copy.deepcopy(model).double()  # the float64 reference both are held to
            for c in range(args.checks):
                torch.manual_seed(1000 + c)
                xs = [t.cuda().to(dtype) if torch.is_tensor(t) and t.is_floating_point() else t for t in mod.get_inputs()]
                torch.manual_seed(7)
                ref = model(*xs)
                torch.manual_seed(7)
                out = fused(*xs)
                ok = ok and bool(torch.allclose(out, ref, atol=tol, rtol=tol))
                row["max_diff"] = max(row.get("max_diff", 0.0), float((out.float() - ref.float()).abs().max()))
                torch.manual_seed(7)
                try:  # a model that fixes a dtype inside forward has no float64 run: reported as nan
                    ref64 = model64(*[t.double() if torch.is_tensor(t) and t.is_floating_point() else t for t in xs])
                except RuntimeError:
                    ref64 = None
                for key, o in (("err64_eager", ref), ("err64_fused", out)):
                    err = float("nan") if ref64 is None else float((o.double() - ref64).abs().max())
                    row[key] = err if math.isnan(err) else max(row.get(key, 0.0), err)
            del model64
            row["correct"] = ok
            row["served"] = served_by(fused)
            bad += not ok
            fns = [lambda: model(*inputs), lambda: fused(*inputs)]
            if not args.no_compile:
                compiled = torch.compile(model)
                fns.append(lambda: compiled(*inputs))
            if args.backend:  # checked on the last check's inputs; a failure is reported, the run goes on
                try:
                    with_backend = torch.compile(model, backend=ftt.backend(db=args.db))
                    torch.manual_seed(7)
                    bout = with_backend(*xs)
                    row["backend_ok"] = bool(torch.allclose(bout, ref, atol=tol, rtol=tol))
                    bad += not row["backend_ok"]
                    row["err64_backend"] = float("nan") if ref64 is None else float((bout.double() - ref64).abs().max())
                    fns.append(lambda: with_backend(*inputs))
                except Exception as e:  # noqa: BLE001
                    row["backend_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
                    print(f"{name}: backend: {row['backend_error']}", flush=True)
            if args.graphs:
                fns = [as_graph(torch, fn) for fn in fns]
            host_us = []
            ms = kb_times(torch, fns, args.trials, host_us)
            row["host_us"] = host_us
            row["eager"], row["fused"] = ms[0], ms[1]
            row["compile"] = ms[2] if not args.no_compile else float("nan")
            row["backend"] = ms[-1] if args.backend and "backend_error" not in row else float("nan")
        rows.append(row)
        print(f"{name}: eager {row['eager']:.4f} ms, fused {row['fused']:.4f} ms ({row['eager'] / row['fused']:.3f}x), "
              f"compile {row['compile']:.4f} ms, correct {row['correct']} (max |diff| {row['max_diff']:.2e}; "
              f"max |error| against float64: eager {row['err64_eager']:.2e}, fused {row['err64_fused']:.2e}); "
              f"host us per call (median): {', '.join(f'{h:.1f}' for h in row['host_us'])}", flush=True)
    print(f"\n{torch.cuda.get_device_name()}  dtype {args.dtype}  tol {tol:g}  trials {args.trials}  "
          f"torch {torch.__version__}" + ("  CUDA graphs" if args.graphs else "  call by call"))
    print(f"{'problem':<58} {'eager ms':>9} {'compile':>9} {'fused':>9} {'x eager':>8} {'x compile':>9}  ok  {'err64 eager/fused':>17}  served by")
    speed, vs_compile = [], []
    for r in rows:
        if "error" in r:
            print(f"{r['name']:<58} {r['error']}")
            continue
        se, sc = r["eager"] / r["fused"], r["compile"] / r["fused"]
        speed.append(se)
        if not math.isnan(sc):
            vs_compile.append(sc)
        print(f"{r['name']:<58} {r['eager']:9.4f} {r['compile']:9.4f} {r['fused']:9.4f} {se:8.3f} {sc:9.3f}  "
              f"{'yes' if r['correct'] else 'NO '} {r['err64_eager']:8.1e}/{r['err64_fused']:8.1e}  {r['served']}")
    if speed:
        geo = math.exp(sum(math.log(s) for s in speed) / len(speed))
        print(f"geometric mean x eager {geo:.3f} over {len(speed)}; min {min(speed):.3f}"
              + (f"; x compile geomean {math.exp(sum(math.log(s) for s in vs_compile) / len(vs_compile)):.3f}, "
                 f"min {min(vs_compile):.3f}" if vs_compile else ""))
    if args.backend:  # torch.compile with fusedtune's backend: fused layers, the rest by Inductor
        print(f"\n{'problem':<58} {'backend ms':>10} {'x eager':>8} {'x compile':>9}  ok  {'err64':>8}")
        for r in rows:
            if "error" in r:
                continue
            if "backend_error" in r:
                print(f"{r['name']:<58} {r['backend_error']}")
            else:
                print(f"{r['name']:<58} {r['backend']:10.4f} {r['eager'] / r['backend']:8.3f} "
                      f"{r['compile'] / r['backend']:9.3f}  {'yes' if r['backend_ok'] else 'NO '} {r['err64_backend']:8.1e}")
    if args.tune:  # what tuning the set took (fusedtune.torch.tune, skipping what the database held)
        print(f"tuning: {sum(r.get('tune_s', 0.0) for r in rows):.1f} s for {len(rows)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
