"""GPU test of fusedtune.torch.FusedLinear against float64: three epilogues and a gated pair
(FusedLinear.from_gated), every math mode the library has, ragged shapes, the default and a
non-default stream, and the checks that must stop a call before its launch. Exits 77 (skipped) without torch, CUDA or a GPU the library can use.

    python3 tests/python/gpu/gpu_test_torch.py [--db PATH] [--keep] [--gated-only | --fp8-only]

Needs nothing tuned beforehand: for each (epilogue, mode) the first shape is tuned on first use
into a scratch database (autotune, 4 candidates), the other shapes run the nearest tuned result
(the 3-d input's M = 6 of the first shape's N and K: its M bucket 37, without a warning).
--db PATH reuses (and fills) PATH instead, so a second run tunes nothing. The library is
FUSEDTUNE_LIBRARY, else the build tree's (build/libfusedtune.so.0); tunes run their candidates in
$FUSEDTUNE_WORKER, else the fusedtune-worker the library finds (beside a build-tree library).
"""
import argparse
import math
import os
import shutil
import sys
import tempfile
import warnings

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("SKIP: torch is not installed for this python3")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: torch sees no CUDA device")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import fusedtune  # noqa: E402
from fusedtune.torch import FusedLinear, NearestShapeWarning  # noqa: E402

# name: (expression, float64 reference of E(acc), eager PyTorch in the layer's dtype)
EPILOGUES = {
    "minsub": ("min(x + bias, c) - c where c = 2",
               lambda a, p: torch.minimum(a + p["bias"], torch.tensor(2.0, dtype=a.dtype, device=a.device)) - 2.0,
               lambda a, p: torch.minimum(a + p["bias"], torch.tensor(2.0, dtype=a.dtype, device=a.device)) - 2.0),
    "biasrelu": ("relu(x + bias)", lambda a, p: torch.relu(a + p["bias"]), lambda a, p: torch.relu(a + p["bias"])),
    "silu_rowcol": ("silu(x * g + bias) + r * s where col g, row r, scalar s",
                    lambda a, p: F.silu(a * p["g"] + p["bias"]) + p["r"][:, None] * p["s"],
                    lambda a, p: F.silu(a * p["g"] + p["bias"]) + p["r"][:, None] * p["s"]),
}
# (input shape, out_features): ragged M, N and K; K = 515 leaves the tensor-core family out
# (whole 16-byte rows), so the nearest result must be one that applies; a 3-d input.
SHAPES = [((37, 264), 129), ((130, 515), 250), ((2, 3, 264), 129)]
# Unit roundoff of what each mode rounds (docs/MODES.md's tolerance rule).
UNIT = {"fp32": 0.0, "tf32": 2.0 ** -11, "bf16": 2.0 ** -8, "fp16": 2.0 ** -11}

failures, passes = [], 0


def rel_l2(y, ref):
    y, ref = y.double().reshape(-1), ref.double().reshape(-1)
    if not torch.isfinite(y).all():
        return math.inf
    return float(torch.linalg.vector_norm(y - ref) / torch.linalg.vector_norm(ref).clamp_min(1e-300))


def record(ok, line):
    global passes
    print(("ok    " if ok else "FAIL  ") + line, flush=True)
    if ok:
        passes += 1
    else:
        failures.append(line)


def poison(numel, dtype):
    """Leaves a NaN-filled block in torch's cache, so an output element no kernel writes shows."""
    t = torch.full((numel,), float("nan"), dtype=dtype, device="cuda")
    del t


def run_case(db, name, mode, in_shape, n, first, gen):
    text, ref_fn, eager_fn = EPILOGUES[name]
    dtype = getattr(torch, mode.dtype)
    k, lead = in_shape[-1], in_shape[:-1]
    m = math.prod(lead)
    x = torch.rand(in_shape, generator=gen, device="cuda").to(dtype)
    lin = torch.nn.Linear(k, n, device="cuda", dtype=dtype)
    params = {}
    if "g" in text:
        params = {"g": (torch.rand(n, generator=gen, device="cuda") + 0.5).to(dtype), "s": 0.75}
    autotune = {"max_candidates": 4, "budget_s": 120} if first else False
    layer = FusedLinear.from_linear(lin, text, math=mode.name, params=params, db=db, autotune=autotune)
    call = {"r": (torch.rand(m, generator=gen, device="cuda") - 0.5).to(dtype)} if "r * s" in text else {}

    # References: float64 from the inputs as the kernel sees them (tf32: the fp32 values), and
    # eager PyTorch in the mode, whose own error sets the tolerance outside fp32.
    p64 = {"bias": lin.bias.double(), **{k_: v.double() if torch.is_tensor(v) else v for k_, v in params.items()},
           **{k_: v.double() for k_, v in call.items()}}
    x2 = x.reshape(m, k)
    ref = ref_fn(x2.double() @ lin.weight.double().T, p64)
    with torch.no_grad():
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = mode.name == "tf32"
        pe = {"bias": lin.bias, **params, **call}
        eager = eager_fn(x2 @ lin.weight.T, pe)
        torch.backends.cuda.matmul.allow_tf32 = prev
    eager_err = rel_l2(eager, ref)
    tol = 1e-5 if mode.name == "fp32" else 2 * eager_err + UNIT.get(mode.name, 2.0 ** -8)

    shape = "x".join(map(str, in_shape)) + f"->{n}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NearestShapeWarning)
        with torch.inference_mode():
            poison(m * n, dtype)
            y = layer(x, **call)
            torch.cuda.synchronize()
    plan = layer.plan_for(m)
    how = ("exact" if plan.config.exact else "bucket M=%d" % plan.config.tuned_m if plan.config.bucket
           else "nearest %dx%dx%d" % plan.config.tuned_shape)
    nearest = not plan.config.exact and not plan.config.bucket  # a bucket serves without a warning
    nearest_warned = any(issubclass(w.category, NearestShapeWarning) for w in caught)
    err = rel_l2(y, ref)
    desc = f"{name:11s} {mode.name:5s} {shape:14s}"
    record(tuple(y.shape) == lead + (n,) and err <= tol and nearest_warned == nearest,
           f"{desc} default stream  rel {err:.2e} (eager {eager_err:.2e}, tol {tol:.2e}) {plan.config.name} {how}")

    # A non-default stream: x is written there after a delay, so a launch on any other stream
    # would read the NaN it held before.
    s = torch.cuda.Stream()
    xs = torch.full_like(x, float("nan"))
    torch.cuda.synchronize()
    with torch.inference_mode(), torch.cuda.stream(s):
        assert torch.cuda.current_stream().cuda_stream != 0
        torch.cuda._sleep(20_000_000)
        xs.copy_(x)
        poison(m * n, dtype)
        ys = layer(xs, **call)
    s.synchronize()
    err_s = rel_l2(ys, ref)
    record(err_s <= tol, f"{desc} side stream     rel {err_s:.2e} (tol {tol:.2e}), bitwise equal to the default "
                         f"stream's: {torch.equal(ys, y)}")
    return layer, x, call


def expect_error(desc, fragment, fn):
    """fn() must raise a fusedtune error whose message holds fragment."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NearestShapeWarning)
            fn()
    except fusedtune.FusedtuneError as e:
        record(fragment in str(e), f"{desc} {fragment!r} in {str(e).splitlines()[0]!r}")
        return
    record(False, f"{desc} {fragment!r}: no error raised")


def check_errors(db, layer, x, call, mode):
    """Calls that must stop before any launch, with an error naming the argument."""
    dtype = getattr(torch, mode.dtype)

    def expect(fragment, fn):
        expect_error(f"error  {mode.name:5s}", fragment, fn)

    other = torch.float16 if dtype != torch.float16 else torch.bfloat16
    with torch.inference_mode():
        expect("x is " + str(other).split(".")[1], lambda: layer(x.to(other), **call))
        strided = torch.zeros(x.shape[:-1] + (2 * x.shape[-1],), dtype=dtype, device="cuda")[..., ::2]
        expect("x is not contiguous", lambda: layer(strided, **call))
        expect("x is on cpu", lambda: layer(x.cpu(), **call))
        if call:
            expect("r has shape", lambda: layer(x, r=call["r"][:-1]))
    expect("x requires grad", lambda: layer(x.detach().float().to(dtype).requires_grad_(True), **call))
    # A view one element in: correct, or an error that names x; never a wrong result.
    m, k = x.reshape(-1, x.shape[-1]).shape
    buf = torch.empty(m * k + 1, dtype=dtype, device="cuda")
    view = buf[1:].view(m, k)
    view.copy_(x.reshape(m, k))
    try:
        with torch.inference_mode():
            y1 = layer(view, **call)
            y0 = layer(x.reshape(m, k), **call)
        d = rel_l2(y1, y0)  # split-K / stream-K sums may differ in the last bit, not more
        record(d <= 1e-2, f"error  {mode.name:5s} unaligned x view: ran, rel diff {d:.1e} from the aligned call")
    except fusedtune.InvalidArgumentError as e:
        record(str(e).startswith("FusedLinear: x ") or str(e).startswith("x "),
               f"error  {mode.name:5s} unaligned x view refused: {e}")
    # Nothing tuned and no nearest allowed: the error names the tune command.
    strict = FusedLinear.from_linear(torch.nn.Linear(77, 33, device="cuda", dtype=dtype), "relu(x + bias)",
                                     math=mode.name, db=db, nearest=False)
    try:
        with torch.inference_mode():
            strict(torch.zeros(3, 77, dtype=dtype, device="cuda"))
        record(False, f"error  {mode.name:5s} untuned shape: no error raised")
    except fusedtune.NotTunedError as e:
        # fp32 is the default (no --math: tuned at fp32 accuracy, which serves an fp32 layer).
        want = "tune --shape 3x33x77 --epilogue 'relu(x + bias)'" + ("" if mode.name == "fp32" else f" --math {mode.name}")
        record(e.command.endswith(want) and e.command in str(e), f"error  {mode.name:5s} untuned: {e.command}")


def check_fast_path(db, mode, gen):
    """Repeat calls without keyword arguments skip the checks while nothing they looked at has
    changed (FusedLinear._signature): new x values, a weight changed in place, and a bias
    replaced must each give the float64 result; a replaced weight of another dtype, a bias
    set to None or requiring grad, and a strided x must still be refused."""
    dtype = getattr(torch, mode.dtype)
    k, n = 264, 129
    lin = torch.nn.Linear(k, n, device="cuda", dtype=dtype)
    layer = FusedLinear.from_linear(lin, "relu(x + bias)", math=mode.name, db=db)
    tol = {"fp32": 1e-5, "3xtf32": 1e-4}.get(mode.name, 8 * UNIT.get(mode.name, 2.0 ** -8))
    desc = f"fast   {mode.name:5s}"

    def run(what, x):
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore", NearestShapeWarning)
            poison(x.shape[0] * n, dtype)
            y = layer(x)
            torch.cuda.synchronize()
        ref = torch.relu(x.double() @ layer.weight.double().T + layer.bias.double())
        err = rel_l2(y, ref)
        record(err <= tol, f"{desc} {what:34s} rel {err:.2e} (tol {tol:.2e})")

    x = torch.rand((37, k), generator=gen, device="cuda").to(dtype)
    run("first call (checked)", x)
    from fusedtune.torch import _native
    if _native.active():
        desc = f"native {mode.name:5s}"
        record(_native.fallback() == "plan", f"{desc} the first call resolved its plan in Python")
        run("second call (C++)", x)
        record(_native.fallback() == "", f"{desc} the second call stayed in C++ ('{_native.fallback()}')")
    else:
        record(layer._fast is not None, f"{desc} a signature kept after the first call")
    run("new x values", torch.rand((37, k), generator=gen, device="cuda").to(dtype))
    with torch.no_grad():
        layer.weight.neg_()
    run("weight negated in place", x)
    layer.bias = torch.nn.Parameter(layer.bias + 1.0, requires_grad=False)
    run("bias replaced (+1)", x)
    run("bias replaced, again", x)
    other = torch.float16 if dtype != torch.float16 else torch.bfloat16

    def expect(fragment, fn):
        expect_error(desc, fragment, fn)

    with torch.inference_mode():
        strided = torch.zeros((37, 2 * k), dtype=dtype, device="cuda")[:, ::2]
        expect("x is not contiguous", lambda: layer(strided))
    bias = layer.bias
    layer.bias.requires_grad_(True)
    expect("bias requires grad", lambda: layer(x))
    layer.bias.requires_grad_(False)
    layer.bias = None
    with torch.inference_mode():
        expect("bias must be a tensor", lambda: layer(x))
    layer.bias = bias
    weight = layer.weight
    layer.weight = torch.nn.Parameter(weight.to(other), requires_grad=False)
    with torch.inference_mode():
        expect("weight is " + str(other).split(".")[1], lambda: layer(x.to(other)))
    layer.weight = weight
    run("weight and bias restored", x)


def check_fp8(db, gen):
    """FusedLinear.from_linear(bf16 layer, E, math="fp8") after a tune of its fp8 problem: a ragged
    M (N and K multiples of 16, as fp8 needs), the output NaN-poisoned, against float64 of
    the unquantized layer within what e4m3 per token x per channel gives (docs/MODES.md: 3-4e-2)."""
    from fusedtune.fp8 import fp8_epilogue
    m, n, k = 37, 144, 256
    lin = torch.nn.Linear(k, n, device="cuda", dtype=torch.bfloat16)
    x = (torch.rand((m, k), generator=gen, device="cuda") - 0.5).to(torch.bfloat16)
    with fusedtune.Database(db) as d:
        d.tune(fusedtune.Problem(m, n, k, fp8_epilogue("relu(x + bias)"), "fp8"), max_candidates=4, budget_s=120)
    layer = FusedLinear.from_linear(lin, "relu(x + bias)", math="fp8", db=db)
    poison(m * n, torch.bfloat16)
    with torch.no_grad():
        y = layer(x)
    torch.cuda.synchronize()
    ref = torch.relu(x.double() @ lin.weight.double().t() + lin.bias.double())
    err = rel_l2(y, ref)
    record(y.dtype == torch.bfloat16 and err <= 0.08, f"fp8    {m}x{n}x{k} relu(x + bias) from a bf16 layer: rel {err:.2e} (bound 8e-2)")
    # An e4m3 output (output="e4m3"): y's codes and row scales, the bytes the quantizer makes of the
    # bf16 y; a next fp8 layer takes them as its x, giving what it gives on that bf16 y.
    from fusedtune.fp8 import E4M3Rows, Quantizer
    layer8 = FusedLinear.from_linear(lin, "relu(x + bias)", math="fp8", db=db, output="e4m3")
    poison(m * n, torch.bfloat16)
    with torch.no_grad():
        rows = layer8(x)
    with fusedtune.Database(db) as d:
        q = Quantizer(d)
        want = q.quantize(y)
        torch.cuda.synchronize()
        q.close()
    same = (isinstance(rows, E4M3Rows) and torch.equal(rows.codes.view(torch.uint8), want.codes.view(torch.uint8))
            and torch.equal(rows.scales, want.scales))
    record(same, f"fp8    {m}x{n}x{k} output e4m3: codes and row scales as the quantizer's of the bf16 y")
    with torch.no_grad():
        rows3 = layer8(x.reshape(1, m, k))  # leading dimensions: codes [1, m, n], a scale per row
    torch.cuda.synchronize()
    record(tuple(rows3.codes.shape) == (1, m, n) and torch.equal(rows3.codes.view(torch.uint8)[0], want.codes.view(torch.uint8))
           and torch.equal(rows3.scales, want.scales), f"fp8    output e4m3 of a [1, {m}, {k}] x: codes [1, {m}, {n}]")
    n2 = 64
    lin2 = torch.nn.Linear(n, n2, device="cuda", dtype=torch.bfloat16)
    with fusedtune.Database(db) as d:
        d.tune(fusedtune.Problem(m, n2, n, fp8_epilogue("x + bias"), "fp8"), max_candidates=4, budget_s=120)
    nxt = FusedLinear.from_linear(lin2, "x + bias", math="fp8", db=db)
    with torch.no_grad():
        y_rows, y_bf16 = nxt(rows), nxt(y)
    torch.cuda.synchronize()
    record(torch.equal(y_rows, y_bf16), f"fp8    {m}x{n2}x{n} x + bias on E4M3Rows: as on the bf16 y it holds")
    try:
        nxt(E4M3Rows(rows.codes, rows.scales[:-1]))
        record(False, "fp8    E4M3Rows with too few scales: no error")
    except fusedtune.InvalidArgumentError as e:
        record("x.scales has shape" in str(e), f"fp8    E4M3Rows with too few scales refused: {e}")
    # E's own vectors beside the layer's scales (issue 58 item 9): a col vector held by the layer, a
    # row vector given per call, a scalar.
    from fusedtune.fp8 import FP8Linear
    text = "relu(x + bias) * v * t + r where col v, row r, scalar t"
    with fusedtune.Database(db) as d:
        d.tune(fusedtune.Problem(m, n, k, fp8_epilogue(text), "fp8"), max_candidates=4, budget_s=120)
    v = torch.rand(n, generator=gen, device="cuda") + 0.5
    r = torch.rand(m, generator=gen, device="cuda") - 0.5
    layer = FP8Linear.from_linear(lin, text, db=db, params={"v": v, "t": 1.5})
    poison(m * n, torch.bfloat16)
    with torch.no_grad():
        y = layer(x, r=r)
    torch.cuda.synchronize()
    ref = torch.relu(x.double() @ lin.weight.double().t() + lin.bias.double()) * v.double() * 1.5 + r.double()[:, None]
    err = rel_l2(y, ref)
    record(y.dtype == torch.bfloat16 and err <= 0.08,
           f"fp8    {m}x{n}x{k} {text} (col v held, row r per call, t = 1.5): rel {err:.2e} (bound 8e-2)")


def check_gated(db, mode, gen):
    """FusedLinear.from_gated (SwiGLU halves without biases) at a ragged M, N a multiple of 8 but
    not of 16, and a 3-d input, tuned on first use, against float64 within the eager chain's error."""
    dtype = getattr(torch, mode.dtype)
    n, k = 264, 264
    gate = torch.nn.Linear(k, n, bias=False, device="cuda", dtype=dtype)
    up = torch.nn.Linear(k, n, bias=False, device="cuda", dtype=dtype)
    layer = FusedLinear.from_gated(gate, up, "silu(x) * x2", math=mode.name, db=db,
                                   autotune={"max_candidates": 4, "budget_s": 120})
    for in_shape in ((37, k), (2, 3, k)):
        x = torch.rand(in_shape, generator=gen, device="cuda").to(dtype)
        x2 = x.reshape(-1, k)
        ref = F.silu(x2.double() @ gate.weight.double().T) * (x2.double() @ up.weight.double().T)
        with torch.no_grad():
            prev = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = mode.name == "tf32"
            eager = F.silu(F.linear(x2, gate.weight)) * F.linear(x2, up.weight)
            torch.backends.cuda.matmul.allow_tf32 = prev
        eager_err = rel_l2(eager, ref)
        tol = 1e-5 if mode.name == "fp32" else 2 * eager_err + UNIT.get(mode.name, 2.0 ** -8)
        with torch.inference_mode():
            poison(x2.shape[0] * n, dtype)
            y = layer(x)
            torch.cuda.synchronize()
        err = rel_l2(y, ref)
        shape = "x".join(map(str, in_shape)) + f"->{n}"
        record(tuple(y.shape) == tuple(in_shape[:-1]) + (n,) and err <= tol,
               f"gated  {mode.name:5s} {shape:14s} rel {err:.2e} (eager {eager_err:.2e}, tol {tol:.2e}) "
               f"{layer.plan_for(x2.shape[0]).config.name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", help="database to tune into and read (default: a scratch file, removed after)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch database")
    ap.add_argument("--gated-only", action="store_true", help="only the gated pairs (FusedLinear.from_gated)")
    ap.add_argument("--fp8-only", action="store_true", help="only the fp8 layer (FusedLinear.from_linear, math fp8)")
    args = ap.parse_args()
    if args.gated_only and args.fp8_only:
        ap.error("--gated-only and --fp8-only exclude each other")
    try:
        fusedtune.devices()
    except fusedtune.NoDeviceError as e:
        print(f"SKIP: {e}")
        return 77
    print(f"library: {fusedtune.library.describe()}; GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    path = args.db or os.path.join(tempfile.mkdtemp(prefix="ft_gpu_torch_", dir=os.environ.get("FT_TEST_TMP")),
                                   "torch.db")
    fusedtune.Database(path, create=True).close()
    gen = torch.Generator(device="cuda").manual_seed(1234)
    for mode in fusedtune.math_modes().values():
        if mode.name == "fp8" or args.fp8_only:  # fp8: a bf16 layer quantized, check_fp8 below
            continue
        if not hasattr(torch, mode.dtype):
            record(False, f"mode {mode.name}: torch has no dtype {mode.dtype}")
            continue
        last = None
        for name in () if args.gated_only else EPILOGUES:
            for i, (in_shape, n) in enumerate(SHAPES):
                try:
                    last = run_case(path, name, mode, in_shape, n, i == 0, gen)
                except fusedtune.FusedtuneError as e:
                    record(False, f"{name:11s} {mode.name:5s} {in_shape}: {type(e).__name__}: {e}")
        if last:
            check_errors(path, *last, mode)
        try:
            if not args.gated_only:  # forward's Python fast path, then the same calls through the C++ operator
                from fusedtune.torch import _native
                native = _native.active()
                _native.use(False)
                try:
                    check_fast_path(path, mode, gen)
                finally:
                    _native.use(True)
                if native:
                    check_fast_path(path, mode, gen)
        except fusedtune.FusedtuneError as e:
            record(False, f"fast   {mode.name:5s}: {type(e).__name__}: {e}")
        try:
            check_gated(path, mode, gen)
        except fusedtune.FusedtuneError as e:
            record(False, f"gated  {mode.name:5s}: {type(e).__name__}: {e}")
    try:
        if not args.gated_only:
            check_fp8(path, gen)
    except fusedtune.FusedtuneError as e:
        record(False, f"fp8: {type(e).__name__}: {e}")
    if not args.db and not args.keep:
        # The folder this test made, with its database: layers of this process may still hold it
        # open, which remove_database refuses.
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    else:
        print(f"database: {path}")
    print(f"{passes} passed, {len(failures)} failed")
    for f in failures:
        print("  FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
