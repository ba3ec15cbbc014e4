"""FusedLinear measured the way users run it, on a benchmark set of (shape, epilogue) problems, in
one process. For each problem and math mode asked for, three things are each captured as N calls
(--calls, default 20) into a torch.cuda.CUDAGraph and the graphs replayed in interleaved rounds
(mm, eager, fused, mm, eager, fused, ...; warm-up first; the median ms per call over --rounds
rounds, at least 15):
  mm     torch.mm(x, W.t()) alone, in the same dtype ("GEMM alone"; tf32: fp32 tensors with
         torch.backends.cuda.matmul.allow_tf32 = True, as for eager);
  eager  PyTorch eager of the same expression: F.linear (with the bias where the expression adds
         it) followed by the torch ops of the epilogue;
  fused  FusedLinear with the stored best of a default tune (exact shape; nearest=False);
  with --compile also compiled: torch.compile (default mode) of the eager function, captured
         and replayed the same way (issue 53's and 54's other peer).
Then eager and fused call by call without graphs ("pipelined": N calls back to back per timing,
the host running ahead), interleaved the same way. The table gives the ms of each, "vs mm" =
t_mm / t_fused and "vs eager" = t_eager / t_fused (ratios of the medians; > 1: fused is faster),
and the relative L2 error of eager and of FusedLinear against float64 (x.double() @
W.double().t() [+ bias], then the epilogue in float64). FusedLinear's output must be finite.

    python3 bench/python/bench_graphs.py --db DB [--math bf16,fp16,tf32] [--only NAME,...]
                                          [--rounds N] [--calls N] [--chain] [--compile]
                                          [--dry-run | --list]

A problem not tuned in a mode is reported with the command that tunes it, and skipped:
    fusedtune --db DB tune --shape MxNxK --epilogue 'E' --math M
--list prints the set (after --only) as shape<TAB>epilogue lines (scripts/gpu/bench_set.sh tunes
from it, so the set is defined here only); --dry-run prints the plan and the tune commands
without torch or a GPU. Exit status: 0 all rows measured; 3 some not tuned; 1 a failure (an
output not finite, a capture or launch error).
"""
import argparse
import ctypes
import os
import re
import shlex
import sys
import time
from collections import namedtuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

# torch is imported by _import_torch() only when measuring: --list and --dry-run run without it.
# The epilogue lambdas below read these module globals when called.
torch = None
F = None

# name: the short name for --only; expr: the epilogue in fusedtune's language (its canonical form,
# the database's key); post: the eager torch ops applied to y = the linear's output (F.linear with
# the bias when expr uses `bias`), in the tensors' dtype for eager and in float64 for the
# reference; post_text: the same, for --dry-run.
Problem = namedtuple("Problem", "name m n k expr post post_text")

PROBLEMS = [
    Problem("minsub", 128, 16384, 16384, "min(x + bias, c) - c where c = 2",
            lambda y: torch.clamp(y, max=2.0) - 2.0, "torch.clamp(y, max=2.0) - 2.0"),
    Problem("biasrelu", 1024, 8192, 8192, "relu(x + bias)", lambda y: F.relu(y), "F.relu(y)"),
    Problem("gelu4k", 4096, 4096, 4096, "gelu(x + bias)", lambda y: F.gelu(y), "F.gelu(y)  (exact erf form)"),
    Problem("silu512", 512, 11008, 4096, "silu(x + bias)", lambda y: F.silu(y), "F.silu(y)"),
    Problem("tanhsp", 2048, 8192, 8192, "tanh(softplus(x + bias)) * sigmoid(x + bias)",
            lambda y: torch.tanh(F.softplus(y)) * torch.sigmoid(y),
            "torch.tanh(F.softplus(y)) * torch.sigmoid(y)  (softplus beta 1, threshold 20)"),
    Problem("gelutanh", 1024, 8192, 8192, "gelu_tanh(x + bias) * 1.5",
            lambda y: F.gelu(y, approximate="tanh") * 1.5, "F.gelu(y, approximate='tanh') * 1.5"),
    Problem("elusig", 4096, 4096, 4096, "elu(x + bias) + sigmoid(x + bias)",
            lambda y: F.elu(y) + torch.sigmoid(y), "F.elu(y) + torch.sigmoid(y)  (alpha 1)"),
    Problem("silu4k", 4096, 14336, 4096, "silu(x)", lambda y: F.silu(y), "F.silu(y)  (no bias)"),
    Problem("silu16", 16, 14336, 4096, "silu(x)", lambda y: F.silu(y), "F.silu(y)  (no bias)"),
    Problem("x4k", 4096, 4096, 14336, "x", lambda y: y, "y  (plain GEMM, no bias)"),
    Problem("bias64", 64, 6144, 4096, "x + bias", lambda y: y, "y  (F.linear with bias)"),
    Problem("x8k", 8192, 8192, 8192, "x", lambda y: y, "y  (plain GEMM, no bias)"),
    # A residual add (`mat r`: an [M, N] operand, MATS["r"], given to FusedLinear as forward(x, r=...)).
    Problem("res4k", 4096, 4096, 14336, "x + r where mat r", lambda y: y + MATS["r"].to(y.dtype),
            "y + r  (r an [M, N] residual)"),
    Problem("res16", 16, 4096, 14336, "x + r where mat r", lambda y: y + MATS["r"].to(y.dtype),
            "y + r  (r an [M, N] residual)"),
]

# The matrix operands of the row being measured, by name (made in measure_row, read by post).
MATS = {}

def _f32(y):
    """y in float32, as eager reduces the logits (`.float()`), or the float64 reference as it is."""
    return y if y.dtype == torch.float64 else y.float()


# Epilogues that reduce each row (docs/EPILOGUE.md, "Reductions"; y is [M]): named with --only,
# not in the default set (the LM head's float64 check holds 13 GiB).
REDUCTIONS = [
    Problem("lmhead", 8192, 128256, 4096, "logsumexp(x + bias)", lambda y: torch.logsumexp(_f32(y), 1),
            "torch.logsumexp(y.float(), 1)"),
    Problem("sigsum", 128, 32768, 32768, "rowsum(sigmoid(x))", lambda y: torch.sigmoid(y).sum(1),
            "torch.sigmoid(y).sum(1)  (no bias)"),
    Problem("lse128", 128, 32768, 32768, "logsumexp(x)", lambda y: torch.logsumexp(_f32(y), 1),
            "torch.logsumexp(y.float(), 1)  (no bias)"),
]

# More plain GEMMs (issue 55's shapes for 3xtf32 against SGEMM): named with --only. x2k48 is
# 2048x4096x8192; xrag's M and N are no multiple of any tile (K stays a multiple of 4: TMA rows).
GEMMS = [
    Problem("x2k48", 2048, 4096, 8192, "x", lambda y: y, "y  (plain GEMM, no bias)"),
    Problem("xrag", 1000, 6000, 3000, "x + bias", lambda y: y, "y  (F.linear with bias, ragged tiles)"),
]

# Normalizations and softmax (y is [M, N]; issue 53's set): named with --only, not in the default
# set. torch's group_norm and batch_norm (training mode, batch statistics) without affine.
NORMS = [
    Problem("gn16", 1024, 8192, 8192, "groupnorm(x + bias, 512)", lambda y: F.group_norm(y, 512),
            "F.group_norm(y, 512)  (16 features a group)"),
    Problem("gn32", 1024, 8192, 8192, "groupnorm(x + bias, 256)", lambda y: F.group_norm(y, 256),
            "F.group_norm(y, 256)  (32 features a group)"),
    Problem("gn64", 1024, 8192, 8192, "groupnorm(x + bias, 128)", lambda y: F.group_norm(y, 128),
            "F.group_norm(y, 128)  (64 features a group)"),
    Problem("gn512", 1024, 8192, 8192, "groupnorm(x + bias, 16)", lambda y: F.group_norm(y, 16),
            "F.group_norm(y, 16)  (512 features a group)"),
    Problem("gn32k", 32768, 4096, 1024, "groupnorm(x + bias, 64)", lambda y: F.group_norm(y, 64),
            "F.group_norm(y, 64)  (64 features a group)"),
    Problem("bn16k", 16384, 4096, 4096, "batchnorm(x + bias)",
            lambda y: F.batch_norm(y, None, None, training=True), "F.batch_norm(y, None, None, training=True)"),
    Problem("sm128", 128, 16384, 16384, "softmax(x + bias)", lambda y: F.softmax(y, 1), "F.softmax(y, 1)"),
    Problem("sm1k", 1024, 8192, 8192, "softmax(x + bias)", lambda y: F.softmax(y, 1), "F.softmax(y, 1)"),
    Problem("smgelu", 1024, 8192, 8192, "softmax(gelu(x + bias))", lambda y: F.softmax(F.gelu(y), 1),
            "F.softmax(F.gelu(y), 1)"),
]

# The modes this benchmark runs, with their tensors' dtype (torch has no 3xtf32 GEMM to compare).
# "default": float32 tensors with no math asked for, fp32 accuracy (3xtf32 or fp32, whichever the
# tune stored); "fp32" is --math fp32, FFMA kernels and SGEMM alone.
MODES = {"bf16": "bfloat16", "fp16": "float16", "tf32": "float32", "fp32": "float32", "default": "float32"}
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
MIN_ROUNDS = 15


def has_bias(p):
    return re.search(r"\bbias\b", p.expr) is not None


def shape_of(p):
    return f"{p.m}x{p.n}x{p.k}"


def tune_command(db, p, mode):
    """The `fusedtune tune` command, spelled as fusedtune.Problem.tune_command spells it."""
    words = ["fusedtune", "--db", db, "tune", "--shape", shape_of(p), "--epilogue", p.expr]
    words += [] if mode == "default" else ["--math", mode]
    return " ".join(shlex.quote(w) for w in words)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="FusedLinear vs torch.mm alone and eager PyTorch, with CUDA graphs "
                                             "and call by call, on the benchmark set")
    ap.add_argument("--db", help="the tuned database (required, except with --list)")
    ap.add_argument("--math", default="bf16", help="comma-separated modes of " + ",".join(MODES) + " (default bf16)")
    ap.add_argument("--only", help="comma-separated problem names (default: all of the first list): " +
                    ",".join(p.name for p in PROBLEMS) + "; reductions: " + ",".join(p.name for p in REDUCTIONS) +
                    "; more GEMMs: " + ",".join(p.name for p in GEMMS) +
                    "; normalizations and softmax: " + ",".join(p.name for p in NORMS))
    ap.add_argument("--rounds", type=int, default=20, help=f"timed rounds per measurement (at least {MIN_ROUNDS}; "
                                                           "default 20)")
    ap.add_argument("--calls", type=int, default=20, help="calls per graph and per pipelined timing (default 20)")
    ap.add_argument("--chain", action="store_true",
                    help="also time the eager chain as fusedtune stores it (family eager_chain: the mode's "
                         "cuBLAS GEMM, then fusedtune's step kernels) beside PyTorch eager in CUDA graphs: "
                         "issue 53's floor, each step kernel against PyTorch's for the same step")
    ap.add_argument("--compile", action="store_true",
                    help="also time torch.compile (default mode) of the eager function in CUDA graphs beside the "
                         "others (compiled on first call: adds its compile time, seconds per problem)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and the tune commands; no torch, no GPU")
    ap.add_argument("--list", action="store_true", help="print the selected problems as shape<TAB>epilogue lines")
    args = ap.parse_args(argv)
    if not args.list and not args.db:
        ap.error("--db DB is required")
    args.modes = [s.strip() for s in args.math.split(",") if s.strip()]
    bad = [s for s in args.modes if s not in MODES]
    if bad or not args.modes:
        ap.error(f"--math: unknown mode {', '.join(bad) or '(none)'}; choose from {','.join(MODES)}")
    if len(set(args.modes)) != len(args.modes):
        ap.error("--math names a mode twice")
    by_name = {p.name: p for p in PROBLEMS + REDUCTIONS + GEMMS + NORMS}
    if args.only:
        names = [s.strip() for s in args.only.split(",") if s.strip()]
        bad = [s for s in names if s not in by_name]
        if bad or not names:
            ap.error(f"--only: unknown problem {', '.join(bad) or '(none)'}; the set: {','.join(by_name)}")
        args.problems = [p for p in PROBLEMS + REDUCTIONS + GEMMS + NORMS if p.name in set(names)]  # in the set's order
    else:
        args.problems = list(PROBLEMS)
    if args.rounds < MIN_ROUNDS:
        ap.error(f"--rounds must be at least {MIN_ROUNDS}")
    if args.calls < 1:
        ap.error("--calls must be at least 1")
    if args.list and args.dry_run:
        ap.error("--list and --dry-run do not go together")
    return args


def gib(nbytes):
    return nbytes / 2**30


def dry_run(args):
    """The plan, without torch: problems, modes, the eager form, memory, the tune commands."""
    check = None
    try:
        import fusedtune
        check = fusedtune.inspect_epilogue
    except Exception as e:  # noqa: BLE001 -- the library is optional here
        print(f"(fusedtune not loaded, epilogues not checked: {e})")
    print(f"dry run: {len(args.problems)} problems x {len(args.modes)} modes ({','.join(args.modes)}), "
          f"db {args.db}; per row: graphs of {args.calls} calls (mm, eager, fused) and pipelined {args.calls}-call "
          f"timings (eager, fused), {args.rounds} interleaved rounds each after a warm-up")
    bad = 0
    for p in args.problems:
        note = ""
        if check is not None:
            try:
                canon = check(p.expr).canonical
                note = "" if canon == p.expr else f"  NOTE: canonical form is '{canon}'"
            except Exception as e:  # noqa: BLE001
                note, bad = f"  ERROR: {e}", bad + 1
        lin = "F.linear(x, W, bias)" if has_bias(p) else "F.linear(x, W)"
        print(f"{p.name:9s} {shape_of(p):17s} '{p.expr}'{note}")
        print(f"{'':9s} eager: y = {lin}; {p.post_text}")
        for mode in args.modes:
            dt = MODES[mode]
            b = DTYPE_BYTES[dt]
            tensors = b * (p.m * p.k + p.n * p.k + p.n + (2 + p.expr.count("mat ")) * p.m * p.n)
            ref = 8 * (p.m * p.k + p.n * p.k + 3 * p.m * p.n)
            tf = ", allow_tf32" if mode == "tf32" else ""
            print(f"{'':9s} {mode:5s} {dt}{tf}: tensors {gib(tensors):.2f} GiB, float64 check {gib(ref):.2f} GiB; "
                  f"if not tuned: {tune_command(args.db, p, mode)}")
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------------
# Measuring (torch, a GPU)


def _import_torch():
    global torch, F
    import torch as _torch
    import torch.nn.functional as _F
    torch, F = _torch, _F


def rel_l2(y, ref):
    """||y - ref|| / ||ref|| in float64 (inf where y is not finite)."""
    y = y.double()
    if not torch.isfinite(y).all():
        return float("inf")
    num = float(torch.linalg.vector_norm(y - ref))
    den = float(torch.linalg.vector_norm(ref))
    return num / den if den else num


def _warm(fn, times=3):
    """fn's first calls on a side stream (torch's recipe before a capture: lazy initialization,
    cuBLAS workspaces, FusedLinear's plan and fast path are set up outside the graph)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(times):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()


def capture(fn, calls):
    """A CUDAGraph of `calls` calls of fn (each call's output freed at once, so the graph's pool
    holds about one call's tensors)."""
    _warm(fn)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    torch.cuda.synchronize()
    return g


def interleaved_ms(runs, rounds, per_run, warm=3):
    """Median ms per call of each run() (a run enqueues per_run calls), timed in turn a, b, c,
    a, b, c, ... so that clock and thermal drift hit all alike. Each timing starts after a
    synchronization; None in runs is skipped (its result None)."""
    live = [(i, r) for i, r in enumerate(runs) if r is not None]
    for _ in range(warm):
        for _, r in live:
            r()
    torch.cuda.synchronize()
    times = {i: [] for i, _ in live}
    for _ in range(rounds):
        for i, r in live:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            s.record()
            r()
            e.record()
            e.synchronize()
            times[i].append(s.elapsed_time(e) / per_run)
    out = [None] * len(runs)
    for i, t in times.items():
        t.sort()
        n = len(t)
        out[i] = t[n // 2] if n % 2 else 0.5 * (t[n // 2 - 1] + t[n // 2])
    return out


def host_us(fn, calls=200):
    """Host microseconds per call, each enqueued behind the last (the GPU's queue absorbs them;
    synchronized before and after)."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    dt = time.perf_counter() - t0
    torch.cuda.synchronize()
    return dt / calls * 1e6


def host_us_best(fns, runs=5, calls=200):
    """host_us of each of fns, the best of runs interleaved runs (one run of each in turn per
    round, so that a host's drift falls on all of them alike)."""
    best = [float("inf")] * len(fns)
    for _ in range(runs):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], host_us(fn, calls))
    return best


def pipelined(fn, calls):
    def run():
        for _ in range(calls):
            fn()
    return run


def fmt_ms(v):
    return f"{v:9.4f}" if v is not None else f"{'-':>9s}"


def fmt_ratio(a, b):
    return f"{a / b:7.3f}x" if a is not None and b else f"{'-':>8s}"


def chain_launcher(fusedtune, layer, p, x, w, b, y_like):
    """A call of the problem's eager chain (family eager_chain) as a Plan of the served plan's mode
    and problem, or (None, why) where the family has no variant for it."""
    import dataclasses
    served = layer.plan_for(p.m)
    problem, cfg = served.problem, served.config
    v = next((v for v in fusedtune.variants(problem) if v.name.startswith("eager_")), None)
    if v is None:
        return None, "no eager chain for this epilogue"
    raw = type(cfg.raw)()
    ctypes.memmove(ctypes.byref(raw), ctypes.byref(cfg.raw), ctypes.sizeof(raw))
    raw.strategy, raw.name, raw.config, raw.source_hash = (v.strategy.encode(), v.name.encode(), v.config.encode(),
                                                           v.source_hash.encode())
    plan = served.db.plan(problem, dataclasses.replace(cfg, strategy=v.strategy, name=v.name, config=v.config,
                                                       source_hash=v.source_hash, raw=raw))
    vecs = {"bias": b.data_ptr()} if b is not None else {}
    vecs.update({name: t.data_ptr() for name, t in MATS.items()})
    args = plan.make_args(x.data_ptr(), w.data_ptr(), 0, vecs, None, None)

    def call():
        y = torch.empty_like(y_like)
        plan._launch_xy(args, x.data_ptr(), y.data_ptr(), torch.cuda.current_stream().cuda_stream)
        return y
    call.plan = plan
    return call, ""


def measure_row(args, p, mode, fusedtune, FusedLinear):
    """Times one (problem, mode); returns (status, line): status 'ok', 'missing' or 'fail'."""
    dtype = getattr(torch, MODES[mode])
    bias = has_bias(p)
    head = f"{p.name:9s} {shape_of(p):17s} {mode:5s}"
    torch.manual_seed(0)
    lin = torch.nn.Linear(p.k, p.n, bias=bias, device="cuda", dtype=dtype).requires_grad_(False)
    x = torch.randn(p.m, p.k, device="cuda", dtype=dtype)
    w, b = lin.weight, lin.bias
    layer = FusedLinear.from_linear(lin, p.expr, math=None if mode == "default" else mode, db=args.db, nearest=False)
    MATS.clear()
    for name in re.findall(r"\bmat (\w+)", p.expr):
        MATS[name] = torch.randn(p.m, p.n, device="cuda", dtype=dtype)
    prev_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    graphs = []
    try:
        try:
            y = layer(x, **MATS)
            torch.cuda.synchronize()
        except fusedtune.NotTunedError as e:
            return "missing", f"{head} not tuned: {e.command or tune_command(args.db, p, mode)}"
        except fusedtune.FusedtuneError as e:
            return "fail", f"{head} FusedLinear failed: {type(e).__name__}: {e}"
        cfg = layer.plan_for(p.m).config
        if MATS:
            # A second call with fresh matrices: its output (checked below) shows that the launch
            # read the matrices given to this call, not the first call's.
            for name in MATS:
                MATS[name] = torch.randn(p.m, p.n, device="cuda", dtype=dtype)
            y = layer(x, **MATS)
            torch.cuda.synchronize()

        def mm():
            return torch.mm(x, w.t())

        if bias:
            def eager():
                return p.post(F.linear(x, w, b))
        else:
            def eager():
                return p.post(F.linear(x, w))

        def fused():
            return layer(x, **MATS)

        compiled, err_compiled = None, None
        if args.compile:
            torch._dynamo.reset()  # each row's eager is the same code object: no cache limit reached across rows
            compiled = torch.compile(eager)
        chain, chain_note, err_chain = None, "", None
        if args.chain:
            try:
                chain, chain_note = chain_launcher(fusedtune, layer, p, x, w, b, y)
            except Exception as e:  # noqa: BLE001 -- the row goes on without it
                chain_note = f"chain: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
        # Errors against float64 first (then the float64 tensors are freed before timing).
        finite = bool(torch.isfinite(y).all())
        y_eager = eager()
        ref = x.double() @ w.double().t()
        if bias:
            ref += b.double()
        ref = p.post(ref)
        err_eager, err_fused = rel_l2(y_eager, ref), rel_l2(y, ref)
        if chain is not None:
            err_chain = rel_l2(chain(), ref)
        if compiled is not None:
            err_compiled = rel_l2(compiled(), ref)
        del ref, y_eager, y
        torch.cuda.empty_cache()

        notes = [chain_note] if chain_note else []
        timed = (((mm, "mm"), (eager, "eager"), (fused, "fused"), (chain, "chain"), (compiled, "compiled")))
        for fn, label in timed:
            if fn is None:
                graphs.append(None)
                continue
            try:
                graphs.append(capture(fn, args.calls))
            except Exception as e:  # noqa: BLE001 -- reported in the row, the others still timed
                graphs.append(None)
                notes.append(f"{label} capture failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
                torch.cuda.synchronize()
        g_all = interleaved_ms([g.replay if g is not None else None for g in graphs], args.rounds, args.calls)
        g_mm, g_eager, g_fused, g_chain, g_compiled = g_all
        for g in graphs:
            if g is not None:
                g.reset()
        graphs = []
        torch.cuda.empty_cache()
        p_eager, p_fused = interleaved_ms([pipelined(eager, args.calls), pipelined(fused, args.calls)],
                                          args.rounds, args.calls)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32
        del graphs
    if not finite:
        notes.append("FusedLinear output NOT FINITE")
    line = (f"{head} {fmt_ms(g_mm)} {fmt_ms(g_eager)} {fmt_ms(g_fused)} {fmt_ratio(g_mm, g_fused)} "
            f"{fmt_ratio(g_eager, g_fused)} {fmt_ms(p_eager)} {fmt_ms(p_fused)} {fmt_ratio(p_eager, p_fused)} "
            f"{err_eager:9.2e} {err_fused:9.2e}  {cfg.strategy} {cfg.name}")
    if args.chain and g_chain is not None:
        # fusedtune's steps against PyTorch's: each chain less the same GEMM alone (torch.mm; a bias
        # folded into cuBLASLt's GEMM counts as a step on both sides).
        steps = (f"; steps {g_chain - g_mm:.4f} vs PyTorch's {g_eager - g_mm:.4f} ms"
                 if g_mm is not None and g_eager is not None else "")
        line += (f"\n{'':9s} chain {fmt_ms(g_chain)} ms ({cfg_name_of(chain)}), eager / chain "
                 f"{fmt_ratio(g_eager, g_chain).strip()}{steps}; rel L2 {err_chain:.2e}")
    if args.compile and g_compiled is not None:
        line += (f"\n{'':9s} torch.compile {fmt_ms(g_compiled)} ms, vs compile {fmt_ratio(g_compiled, g_fused).strip()} "
                 f"(> 1: fused faster); rel L2 {err_compiled:.2e}")
    if notes:
        line += "  [" + "; ".join(notes) + "]"
    return ("fail" if notes else "ok"), line


def cfg_name_of(chain):
    return chain.plan.config.name if chain is not None else "-"


def measure(args):
    _import_torch()
    import fusedtune
    from fusedtune.torch import FusedLinear
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure (--dry-run prints the plan)", file=sys.stderr)
        return 1
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {fusedtune.library.describe()}")
    print(f"db {args.db}; median ms per call over {args.rounds} interleaved rounds; graphs of {args.calls} calls; "
          f"pipelined: {args.calls} calls back to back; vs = the other's ms / fused ms (> 1: fused faster); "
          f"err: relative L2 vs float64")
    print(f"{'':33s} {'CUDA graphs (ms per call)':^47s} {'pipelined (ms per call)':^28s} {'rel L2 error':^19s}")
    print(f"{'problem':9s} {'shape':17s} {'math':5s} {'mm':>9s} {'eager':>9s} {'fused':>9s} {'vs mm':>8s} "
          f"{'vs eager':>8s} {'eager':>9s} {'fused':>9s} {'vs eager':>8s} {'eager':>9s} {'fused':>9s}  configuration")
    sys.stdout.flush()
    missing = failed = 0
    with torch.no_grad():  # not inference_mode: the layers are built inside, as nn.Linear
        for p in args.problems:
            for mode in args.modes:
                try:
                    status, line = measure_row(args, p, mode, fusedtune, FusedLinear)
                except Exception as e:  # noqa: BLE001 -- out of memory, a CUDA error: the row fails, the run goes on
                    msg = str(e).splitlines()[0][:160] if str(e) else ""
                    status, line = "fail", f"{p.name:9s} {shape_of(p):17s} {mode:5s} {type(e).__name__}: {msg}"
                missing += status == "missing"
                failed += status == "fail"
                print(line)
                sys.stdout.flush()
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
    if missing:
        print(f"{missing} not tuned: run the commands above, then this again")
    return 1 if failed else 3 if missing else 0


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        for p in args.problems:
            print(f"{shape_of(p)}\t{p.expr}")
        return 0
    if args.dry_run:
        return dry_run(args)
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
