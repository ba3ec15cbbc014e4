"""GPU test of the model path: small models (tests/python/cpu/test_capture_cpu.py's, at GPU-sized
widths) tuned whole with fusedtune.torch.tune (a few candidates each, into a scratch database),
rewritten with fusedtune.torch.fuse, and their outputs checked against the model run in float64
(relative to the output's largest magnitude: fp32 1e-4, bf16 3e-2); the SwiGLU MLP also under
torch.compile, captured into a CUDA graph and through the torch.compile backend; MinSub fused with a
dynamic batch (M buckets of the tuned 64); a model not tuned refused with the tune command.
Prints eager and fused ms per call (CUDA events, 50 calls) for each model. Exits 77 (skipped)
without torch, CUDA or a GPU.

    python3 tests/python/gpu/gpu_test_capture.py [--db PATH]
        [--only minsub,batchnorm,swiglu,lmhead,minigpt,mlp_fp8,swiglu_fp8]
"""
import argparse
import copy
import os
import sys
import tempfile
import time

try:
    import torch
except ImportError:
    print("SKIP: torch is not installed for this python3")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: torch sees no CUDA device")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "cpu"))  # test_capture_cpu
import fusedtune  # noqa: E402
import fusedtune.torch  # noqa: E402
from fusedtune import torch as fused_torch  # noqa: E402
from fusedtune.torch import fuse, problems, tune  # noqa: E402
import test_capture_cpu as models  # noqa: E402  (the model classes)

models.K, models.N = 256, 512  # the classes read these when built
failures, passes = [], 0


def record(ok, line):
    global passes
    print(("ok    " if ok else "FAIL  ") + line, flush=True)
    if ok:
        passes += 1
    else:
        failures.append(line)


def rel_err(y, ref):
    y, ref = y.double(), ref.double()
    return float((y - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def ms_per_call(fn, args, calls=50):
    with torch.no_grad():
        for _ in range(3):
            fn(*args)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn(*args)
        end.record()
        torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


CASES = {
    # name: (model class, dtype, inputs)
    "minsub": (models.MinSub, torch.float32, lambda: (torch.randn(64, models.K),)),
    "batchnorm": (models.ScaleBatchNorm, torch.float32, lambda: (torch.randn(64, models.K),)),
    "swiglu": (lambda: models.SwiGLU(models.K, models.N), torch.bfloat16, lambda: (torch.randn(2, 32, models.K),)),
    "lmhead": (lambda: models.LMHeadLSE(vocab=2048), torch.bfloat16, lambda: (torch.randn(64, models.K),)),
    "minigpt": (lambda: models.MiniGPTBlock(n_embd=models.K, n_head=4, seqlen=32), torch.bfloat16,
                lambda: (torch.randn(2, 32, models.K),)),
    # math="fp8": W and x in e4m3 (fusedtune.fp8.FP8Linear) where E allows, bf16 elsewhere
    "mlp_fp8": (lambda: models.MLP((models.K, 512, 512, 256)), torch.bfloat16, lambda: (torch.randn(64, models.K),),
                "fp8"),
    # a gated pair (FP8Linear.from_gated: sw2 for x2) and a residual matrix (bf16) in fp8
    "swiglu_fp8": (lambda: models.SwiGLU(models.K, models.N), torch.bfloat16, lambda: (torch.randn(2, 32, models.K),),
                   "fp8"),
}
TOL = {torch.float32: 1e-4, torch.bfloat16: 3e-2, "fp8": 8e-2}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="database (default: a scratch one)")
    ap.add_argument("--only", help="comma-separated case names (default: all; mlp_fp8 and swiglu_fp8 have not run on "
                                   "a GPU yet)")
    ap.add_argument("--max-candidates", type=int, default=3)
    a = ap.parse_args()
    scratch = tempfile.TemporaryDirectory()
    db = a.db or os.path.join(scratch.name, "capture.db")
    names = a.only.split(",") if a.only else list(CASES)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for name in names:
        cls, dtype, inputs, math = (CASES[name] + (None,))[:4]
        torch.manual_seed(0)
        model = cls().cuda().to(dtype)
        args = tuple(t.cuda().to(dtype) for t in inputs())
        found = problems(model, *args, math=math)
        print(found)
        t0 = time.monotonic()
        tune(model, *args, db=db, math=math, max_candidates=a.max_candidates)
        tuned_s = time.monotonic() - t0
        fused = fuse(model, *args, db=db, math=math)
        ref_model = copy.deepcopy(model).double()
        with torch.no_grad():
            ref = ref_model(*(t.double() for t in args))
            eager = model(*args)
            got = fused(*args)
        err, eager_err = rel_err(got, ref), rel_err(eager, ref)
        tol = TOL[math or dtype]
        record(err <= tol, f"{name}: {len(found)} layers, tuned in {tuned_s:.0f} s; fused error {err:.2e}, "
                           f"eager's {eager_err:.2e} (tolerance {tol:.0e})")
        t_eager, t_fused = ms_per_call(model, args), ms_per_call(fused, args)
        print(f"      {name}: eager {t_eager:.4f} ms, fused {t_fused:.4f} ms per call ({t_eager / t_fused:.2f}x), "
              f"{torch.cuda.get_device_name()}", flush=True)
        if name == "swiglu":
            compiled = torch.compile(fused)
            with torch.no_grad():
                y = compiled(*args)
            record(rel_err(y, ref) <= TOL[dtype], f"{name}: under torch.compile, error {rel_err(y, ref):.2e}")
            static = tuple(t.clone() for t in args)
            with torch.no_grad():
                fused(*static)  # warm: plans looked up before the capture
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    out = fused(*static)
                fresh = tuple(torch.randn_like(t) for t in args)
                for s, f in zip(static, fresh):
                    s.copy_(f)
                graph.replay()
                torch.cuda.synchronize()
                want = ref_model(*(t.double() for t in fresh))
            record(rel_err(out, want) <= TOL[dtype], f"{name}: a CUDA graph replayed on new inputs, error "
                                                     f"{rel_err(out, want):.2e}")
            # the torch.compile backend: Dynamo's graph fused, the rest to Inductor
            torch._dynamo.reset()
            with torch.no_grad():
                y = torch.compile(model, backend=fused_torch.backend(db=db), dynamic=False)(*args)
            record(rel_err(y, ref) <= TOL[dtype], f"{name}: torch.compile(backend=fusedtune.torch.backend), error "
                                                  f"{rel_err(y, ref):.2e}")
        if name == "minsub":
            # fuse(tolerance=...): the fastest stored mode within it (only fp32 is tuned here)
            within = fuse(model, *args, db=db, tolerance=1e-4)
            with torch.no_grad():
                e = rel_err(within(*args), ref)
            modes = [m._mode().name for m in within.modules() if isinstance(m, fusedtune.torch.FusedLinear)]
            record(e <= TOL[dtype] and modes == ["fp32"], f"{name}: fuse(tolerance=1e-4): modes {modes}, error {e:.2e}")
            # fuse(dynamic=True): other batch sizes served by the M bucket of the tuned 64
            flex = fuse(model, *args, db=db, dynamic=True)
            for rows in (40, 17, 100):
                x = torch.randn(rows, models.K, device="cuda", dtype=dtype)
                with torch.no_grad():
                    e = rel_err(flex(x), ref_model(x.double()))
                record(e <= TOL[dtype], f"{name}: fuse(dynamic=True) at M = {rows}, error {e:.2e}")
    # Not tuned: refused with the command that tunes it.
    other = os.path.join(scratch.name, "empty.db")
    fusedtune.Database(other, create=True).close()
    model = models.MinSub().cuda()
    try:
        fuse(model, torch.randn(48, models.K, device="cuda"), db=other)
        record(False, "fuse of a model not tuned: no error")
    except fusedtune.NotTunedError as e:
        record("tune --shape 48x512x256" in (e.command or "") and "is not tuned" in str(e),
               f"fuse of a model not tuned: {str(e).splitlines()[0][:160]}")
    print(f"{passes} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
