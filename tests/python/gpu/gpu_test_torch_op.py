"""GPU test of FusedLinear through the torch op fusedtune::linear: a block of three layers (a
col vector and a scalar, a plain GEMM, a bias) checked against float64 when run eagerly, under
torch.compile(fullgraph=True) (one graph, no break), with mode="reduce-overhead" (CUDA graphs),
with dynamic M (the plan of each M's bucket), captured eagerly into a torch.cuda.CUDAGraph and
replayed on new inputs, and through both launch paths (the compiled extension where it was built,
and ctypes: the same result). Exits 77 (skipped) without torch, CUDA or a GPU.

    python3 tests/python/gpu/gpu_test_torch_op.py [--db PATH] [--dims K,H,P]

Layers: up = FusedLinear(K, H, 'silu(x * g + bias) * s'), down = FusedLinear(H, K, bias=False,
'x'), proj = FusedLinear(K, P, 'x + bias'); bf16, default dims 256,512,384. Each layer's shape
at M = 64 is tuned on first use (autotune, 4 candidates) into a scratch database unless --db
holds it; the other Ms run its M bucket.
"""
import argparse
import os
import shutil
import sys
import tempfile
import types

try:
    import torch
except ImportError:
    print("SKIP: torch is not installed for this python3")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: torch sees no CUDA device")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import fusedtune  # noqa: E402
from fusedtune import _launch  # noqa: E402
from fusedtune.torch import _native  # noqa: E402
import fusedtune.torch.layer as fused_layer  # noqa: E402  (its stream and device functions)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench", "python"))
import bench_graphs  # noqa: E402  (host_us)

bench_graphs._import_torch()
host_us = bench_graphs.host_us
from fusedtune.torch import FusedLinear  # noqa: E402

failures, passes = [], 0


def record(ok, line):
    global passes
    print(("ok    " if ok else "FAIL  ") + line, flush=True)
    if ok:
        passes += 1
    else:
        failures.append(line)


class Block(torch.nn.Module):
    def __init__(self, k, h, p, db):
        super().__init__()
        dt, dev = torch.bfloat16, "cuda"
        tune = {"max_candidates": 4, "budget_s": 60}
        g = (torch.rand(h, device=dev) + 0.5).to(dt)
        self.up = FusedLinear(k, h, device=dev, dtype=dt, epilogue="silu(x * g + bias) * s where col g, scalar s",
                              params={"g": g, "s": 0.75}, db=db, autotune=tune)
        self.down = FusedLinear(h, k, bias=False, device=dev, dtype=dt, epilogue="x", db=db, autotune=tune)
        self.proj = FusedLinear(k, p, device=dev, dtype=dt, epilogue="x + bias", db=db, autotune=tune)

    def forward(self, x):
        return self.proj(self.down(self.up(x)))

    def reference(self, x):
        """float64 of the same block from the bf16 values, each layer's output rounded to bf16 as
        the next layer reads it."""
        u = self.up
        a = x.double() @ u.weight.double().T
        h = (torch.nn.functional.silu(a * u.g.double() + u.bias.double()) * 0.75).to(torch.bfloat16)
        d = (h.double() @ self.down.weight.double().T).to(torch.bfloat16)
        return d.double() @ self.proj.weight.double().T + self.proj.bias.double()


def rel_l2(y, ref):
    y = y.double().reshape(ref.shape)
    if not torch.isfinite(y).all():
        return float("inf")
    return float(torch.linalg.vector_norm(y - ref) / torch.linalg.vector_norm(ref))


TOL = 3e-2  # three bf16 layers, each rounded once (2^-8 per rounding, a few accumulated)


def check(desc, y, ref):
    err = rel_l2(y, ref)
    record(err <= TOL, f"{desc:58s} rel {err:.2e} (tol {TOL:.0e})")
    return err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", help="database to tune into and read (default: a scratch file, removed after)")
    ap.add_argument("--dims", default="256,512,384", help="K,H,P (default 256,512,384)")
    args = ap.parse_args()
    try:
        fusedtune.devices()
    except fusedtune.NoDeviceError as e:
        print(f"SKIP: {e}")
        return 77
    k, h, p = (int(v) for v in args.dims.split(","))
    path = args.db or os.path.join(tempfile.mkdtemp(prefix="ft_gpu_op_", dir=os.environ.get("FT_TEST_TMP")), "op.db")
    fusedtune.Database(path, create=True).close()
    print(f"library: {fusedtune.library.describe()}; launch path: {_launch.use()} {_launch.WHY}; "
          f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    torch.manual_seed(0)
    model = Block(k, h, p, path)
    gen = torch.Generator(device="cuda").manual_seed(7)

    def new_x(m):
        return (torch.rand(m, k, generator=gen, device="cuda") - 0.5).to(torch.bfloat16)

    with torch.inference_mode():
        x = new_x(64)
        y_eager = model(x)  # tunes each layer's M = 64 on first use
        ref = model.reference(x)
        check("eager (M = 64, tuned)", y_eager, ref)
        for name in ("up", "down", "proj"):
            cfg = getattr(model, name).config_for(64)
            print(f"      {name:5s} {cfg.strategy} {cfg.name}")

        # Both launch paths give the same result; host µs per call of each, and of F.linear.
        layers = (model.up, model.down, model.proj)
        paths = ["ctypes", "extension"] if _launch.KIND == "extension" else ["ctypes"]
        if len(paths) == 1:
            print(f"note  no compiled launch path here ({_launch.WHY}): ctypes only")
        hx = model.up(x)
        native = _native.active()  # forward's Python paths: the C++ operator turned off meanwhile
        _native.use(False)
        for path in paths:
            _launch.use(path)
            for layer in layers:
                layer._fast = None  # a layer keeps the launch it recorded: take the checked path once
            y_path = model(x)
            compiled = [isinstance(layer._fast.launch, types.BuiltinFunctionType) for layer in layers]
            record(compiled == [path == "extension"] * 3, f"{path} launch path recorded by the three layers")
            d = rel_l2(y_path, y_eager.double())  # split-K sums may differ in the last bit, not more
            record(d <= 1e-2, f"{path} launch path: rel diff {d:.1e} from the first call's (bitwise equal: "
                              f"{torch.equal(y_path, y_eager)})")
            us = host_us(lambda: model.down(hx))
            lin = host_us(lambda: torch.nn.functional.linear(hx, model.down.weight))
            print(f"      host us per call, {path}: FusedLinear {us:.1f} (F.linear {lin:.1f}) "
                  f"{model.down.config_for(64).strategy}")
        # Where a call's host time goes (the last path's fast path, step by step).
        f, down = model.down._fast, model.down
        hit, yb = f.shapes[hx.shape], down(hx)
        steps = {"forward": lambda: down.forward(hx), "x.new_empty": lambda: hx.new_empty(hit[1]),
                 "current stream": lambda: fused_layer._raw_stream(f.index),
                 "current device": fused_layer._current_device,
                 "launch": lambda: f.launch(hit[2], hx.data_ptr(), f.w, yb.data_ptr(), f.vecs, f.scalars,
                                            fused_layer._raw_stream(f.index))}
        print("      host us per step: " + ", ".join(f"{k} {host_us(fn):.1f}" for k, fn in steps.items()))
        _launch.use()
        _native.use(True)
        if native:  # the C++ operator: one call per layer call, the same plans and launches
            y_native = model(x)
            record(torch.equal(y_native, model(x)) and rel_l2(y_native, y_eager.double()) <= 1e-2,
                   f"C++ operator: rel diff {rel_l2(y_native, y_eager.double()):.1e} from the first call's "
                   f"(bitwise equal: {torch.equal(y_native, y_eager)}); fallback '{_native.fallback()}'")
            record(_native.fallback() == "", "C++ operator: the calls stayed in C++ (no fallback)")
            us = host_us(lambda: model.down(hx))
            lin = host_us(lambda: torch.nn.functional.linear(hx, model.down.weight))
            print(f"      host us per call, C++ operator: FusedLinear {us:.1f} (F.linear {lin:.1f})")
        else:
            print(f"note  no C++ operator here ({_native.status()})")

        # torch.compile, the whole block in one graph of fusedtune::linear calls.
        explained = torch._dynamo.explain(model)(x)
        record(explained.graph_count == 1 and explained.graph_break_count == 0,
               f"torch._dynamo.explain: {explained.graph_count} graph(s), {explained.graph_break_count} break(s)")
        ops = [n for g in explained.graphs for n in g.graph.nodes if "fusedtune" in str(n.target)]
        record(len(ops) == 3, f"the graph calls fusedtune::linear {len(ops)} times (3 layers)")
        torch._dynamo.reset()
        compiled = torch.compile(model, fullgraph=True)
        check("torch.compile(fullgraph=True), M = 64", compiled(x), ref)
        x2 = new_x(64)
        check("torch.compile(fullgraph=True), new x", compiled(x2), model.reference(x2))

        # Dynamic M: each M runs its bucket's plan (M = 64 tuned; 40 and 17 served by bucket 64).
        torch._dynamo.reset()
        dyn = torch.compile(model, fullgraph=True, dynamic=True)
        for m in (64, 40, 17):
            xm = new_x(m)
            check(f"torch.compile(dynamic=True), M = {m}", dyn(xm), model.reference(xm))
        cfg = model.up.config_for(40)
        record(cfg.bucket and cfg.tuned_m == 64, f"M = 40 served by bucket M = {cfg.tuned_m} ({cfg.name})")

        # mode="reduce-overhead": cudagraph trees capture the op after their warm-up runs.
        torch._dynamo.reset()
        from torch._dynamo.utils import counters
        counters.clear()
        ro = torch.compile(model, mode="reduce-overhead", fullgraph=True)
        for i in range(4):
            xi = new_x(64)
            y = ro(xi)
        check("mode='reduce-overhead', 4th call (replayed)", y.clone(), model.reference(xi))
        skips = dict(counters["inductor"]).get("cudagraph_skips", 0)
        record(skips == 0, f"reduce-overhead: {skips} CUDA-graph skip(s)")

    # torch.cuda.graph of the eager block: warm up on a side stream, capture, replay on new x.
    with torch.inference_mode():
        static_x = new_x(64)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(static_x)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = model(static_x)
        for i in range(2):
            static_x.copy_(new_x(64))
            graph.replay()
            torch.cuda.synchronize()
            check(f"torch.cuda.graph capture, replay {i + 1} on new x", static_y, model.reference(static_x))

    if not args.db:
        # The folder this test made, with its database: the model above still holds it open,
        # which remove_database refuses.
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    print(f"{passes} passed, {len(failures)} failed")
    for f in failures:
        print("  FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
