"""The reduction pass alone against PyTorch's kernel for the same step, on the same bf16 [M, N]
tensor, in one process: every in-place pass variant a tune enumerates (the full space) for the
step's epilogue, torch's op (F.group_norm, F.batch_norm in training mode, F.softmax,
F.log_softmax), and a device copy of the tensor (y.copy_: the memory's rate in this run), each
captured as --calls calls into a CUDA graph and replayed in interleaved rounds; medians of the
per-call times. The pass runs in place on a working copy of y (the graph replays it on its own
output, as fast as on fresh values); its output on the original y is checked against torch's
float32 result. Table: ms of torch and of the fastest variant, their ratio (> 1: the pass is
faster), and each one's bandwidth as reads + writes of y over its time (2 M N bytes of bf16 each),
as a share of the copy's.

    FT_REDUCE_PASSES=build/libreduce_passes.so python3 bench/python/bench_reduce.py [--only NAME,...]
        [--rounds N] [--calls N]

The shared library is scripts/gpu/reduce_passes.c built by scripts/gpu/bench_reduce.sh.
"""
import argparse
import ctypes
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_graphs as bg  # noqa: E402  (capture, interleaved_ms)

# name, M, N, the pass's epilogue, torch's op on y
STEPS = [
    ("gn16", 1024, 8192, "groupnorm(x, 512)", lambda F, y: F.group_norm(y, 512)),
    ("gn32", 1024, 8192, "groupnorm(x, 256)", lambda F, y: F.group_norm(y, 256)),
    ("gn64", 1024, 8192, "groupnorm(x, 128)", lambda F, y: F.group_norm(y, 128)),
    ("gn512", 1024, 8192, "groupnorm(x, 16)", lambda F, y: F.group_norm(y, 16)),
    ("gn32k16", 32768, 4096, "groupnorm(x, 256)", lambda F, y: F.group_norm(y, 256)),
    ("gn32k64", 32768, 4096, "groupnorm(x, 64)", lambda F, y: F.group_norm(y, 64)),
    ("bn16k", 16384, 4096, "batchnorm(x)", lambda F, y: F.batch_norm(y, None, None, training=True)),
    ("bn1k", 1024, 8192, "batchnorm(x)", lambda F, y: F.batch_norm(y, None, None, training=True)),
    ("sm128", 128, 16384, "softmax(x)", lambda F, y: F.softmax(y, 1)),
    ("sm1k", 1024, 8192, "softmax(x)", lambda F, y: F.softmax(y, 1)),
    ("lsm1k", 1024, 8192, "log_softmax(x)", lambda F, y: F.log_softmax(y, 1)),
    ("sm32k", 4096, 32768, "softmax(x)", lambda F, y: F.softmax(y, 1)),
]
BF16 = 2  # ft_math


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated names: " + ",".join(s[0] for s in STEPS))
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args()
    bg._import_torch()
    torch, F = bg.torch, bg.F
    lib = ctypes.CDLL(os.environ.get("FT_REDUCE_PASSES", "build/libreduce_passes.so"))
    lib.rp_error.restype = ctypes.c_char_p
    lib.rp_open.restype = ctypes.c_void_p
    lib.rp_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                            ctypes.POINTER(ctypes.c_void_p)]
    lib.rp_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.rp_close.argtypes = [ctypes.c_void_p]
    steps = [s for s in STEPS if not args.only or s[0] in args.only.split(",")]
    print(f"== {torch.cuda.get_device_name()}, torch {torch.__version__}; graphs of {args.calls} calls, "
          f"{args.rounds} interleaved rounds, medians")
    rows, fails = [], 0
    for name, m, n, expr, op in steps:
        torch.manual_seed(0)
        y0 = (torch.randn(m, n, device="cuda") * 3 + 0.5).to(torch.bfloat16)
        ref = op(F, y0.float())
        work, out = y0.clone(), torch.empty_like(y0)
        nbytes = 2 * m * n * 2
        name_buf = ctypes.create_string_buffer(96)
        count = lib.rp_variants(expr.encode(), m, n, BF16, 0, name_buf, 96)
        if count < 0:
            print(f"{name}: {lib.rp_error().decode()}")
            fails += 1
            continue
        passes = []
        for i in range(count):
            lib.rp_variants(expr.encode(), m, n, BF16, i, name_buf, 96)
            h = lib.rp_open(expr.encode(), m, n, BF16, i, (ctypes.c_void_p * 1)(None))
            if not h:
                print(f"{name} {name_buf.value.decode()}: {lib.rp_error().decode()}")
                fails += 1
                continue
            passes.append((name_buf.value.decode(), h))
        stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)  # noqa: E731
        # Correctness first: each variant on a fresh copy of y against torch's float32 result.
        errs = {}
        for vname, h in passes:
            out.copy_(y0)
            if lib.rp_launch(h, ctypes.c_void_p(out.data_ptr()), stream()) != 0:
                print(f"{name} {vname}: {lib.rp_error().decode()}")
                fails += 1
            torch.cuda.synchronize()
            d = (out.float() - ref)
            errs[vname] = (float(d.norm() / ref.norm()), bool(torch.isfinite(out).all()))
        # Rows of +-inf (y * 1e30 * 1e30 overflows): where each variant's result differs from
        # torch's (NaN equal to NaN).
        yinf = (y0.float() * 1e30 * 1e30).to(torch.bfloat16)
        tinf = op(F, yinf.float()).to(torch.bfloat16).float()
        for vname, h in passes:
            out.copy_(yinf)
            lib.rp_launch(h, ctypes.c_void_p(out.data_ptr()), stream())
            torch.cuda.synchronize()
            o = out.float()
            same = (o == tinf) | (torch.isnan(o) & torch.isnan(tinf))
            if not bool(same.all()):
                i = int((~same).flatten().nonzero()[0])
                print(f"   +-inf rows: {vname} differs from torch at {int((~same).sum())} of {same.numel()}, first at "
                      f"{i}: y {float(yinf.flatten()[i])}, pass {float(o.flatten()[i])}, torch {float(tinf.flatten()[i])}")
        runs = [lambda: out.copy_(y0), lambda: op(F, y0)]
        runs += [(lambda h=h: lib.rp_launch(h, ctypes.c_void_p(work.data_ptr()), stream())) for _, h in passes]
        graphs = [bg.capture(r, args.calls) for r in runs]
        t = bg.interleaved_ms([g.replay for g in graphs], args.rounds, args.calls)
        del graphs
        t_copy, t_torch, t_pass = t[0], t[1], t[2:]
        copy_rate = nbytes / t_copy / 1e6  # GB/s
        print(f"-- {name} {m}x{n} {expr}: copy {t_copy * 1e3:.2f} us ({copy_rate:.0f} GB/s), torch {t_torch * 1e3:.2f} us "
              f"({nbytes / t_torch / 1e6 / copy_rate * 100:.0f} % of copy)")
        for (vname, _), tp in zip(passes, t_pass):
            e, fin = errs[vname]
            bad = "" if fin and e < 1e-2 else "  WRONG"
            fails += bool(bad)
            print(f"   {vname:32s} {tp * 1e3:9.2f} us  {t_torch / tp:6.2f}x torch  {nbytes / tp / 1e6 / copy_rate * 100:4.0f} % "
                  f"of copy  rel err {e:.2e}{bad}")
        best = min(range(len(passes)), key=lambda i: t_pass[i]) if passes else None
        if best is not None:
            rows.append((name, f"{m}x{n}", expr, copy_rate, t_torch, passes[best][0], t_pass[best],
                         min(t_pass[i] for i, (v, _) in enumerate(passes) if "_t" not in v and "_r" not in v)))
        for _, h in passes:
            lib.rp_close(h)
    print("\n== pass alone vs torch (us per call; bandwidth = 2 M N bf16 bytes / time, share of the copy's)")
    print(f"{'name':8s} {'shape':12s} {'torch':>8s} {'best pass':>10s} {'vs torch':>9s} {'pass/copy':>9s} "
          f"{'torch/copy':>10s} {'old form':>9s}  best variant")
    for name, shape, expr, rate, tt, vname, tp, told in rows:
        nb = int(shape.split("x")[0]) * int(shape.split("x")[1]) * 4
        print(f"{name:8s} {shape:12s} {tt * 1e3:8.2f} {tp * 1e3:10.2f} {tt / tp:8.2f}x {nb / tp / 1e6 / rate * 100:8.0f}% "
              f"{nb / tt / 1e6 / rate * 100:9.0f}% {told * 1e3:9.2f}  {vname}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
