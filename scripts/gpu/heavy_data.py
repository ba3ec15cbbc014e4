"""Does a heavy epilogue's ratio to torch.mm depend on the data? (Issue 56: the same kernel took
0.1903 ms in tc_variants, x and W uniform on [-1, 1), and 0.2017 ms as FusedLinear in
bench_graphs, x randn and nn.Linear's W.) One process, one layer (the stored best of DB's tune),
CUDA graphs of --calls calls replayed in interleaved rounds: FusedLinear and torch.mm on each input
set, and torch.mm plus the eager epilogue.

    python3 scripts/gpu/heavy_data.py --db DB [--shape 1024x8192x8192] [--epilogue 'gelu_tanh(x + bias) * 1.5']
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import bench_graphs as bg  # noqa: E402

DEFAULT_E = "gelu_tanh(x + bias) * 1.5"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--shape", default="1024x8192x8192")
    ap.add_argument("--epilogue", default=DEFAULT_E)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--calls", type=int, default=10)
    args = ap.parse_args()
    bg._import_torch()
    torch, F = bg.torch, bg.F
    from fusedtune.torch import FusedLinear
    m, n, k = (int(v) for v in args.shape.split("x"))
    torch.manual_seed(0)
    lin = torch.nn.Linear(k, n, device="cuda", dtype=torch.bfloat16).requires_grad_(False)
    sets = {
        "bench (x randn, W nn.Linear)": (torch.randn(m, k, device="cuda", dtype=torch.bfloat16), lin.weight.clone()),
        "tc_variants (x, W uniform [-1,1))": ((torch.rand(m, k, device="cuda") * 2 - 1).to(torch.bfloat16),
                                              (torch.rand(n, k, device="cuda") * 2 - 1).to(torch.bfloat16)),
        "x randn, W uniform [-1,1)": (torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
                                      (torch.rand(n, k, device="cuda") * 2 - 1).to(torch.bfloat16)),
    }
    gpu = torch.cuda.get_device_name()
    print(f"{gpu}, {args.shape} '{args.epilogue}' bf16, CUDA graphs of {args.calls} calls, {args.rounds} rounds")
    for name, (x, w) in sets.items():
        lin.weight.copy_(w)
        layer = FusedLinear.from_linear(lin, args.epilogue, math="bf16", db=args.db, nearest=False)
        layer(x)
        runs = [bg.capture(lambda: torch.mm(x, lin.weight.t()), args.calls), bg.capture(lambda: layer(x), args.calls)]
        if args.epilogue == DEFAULT_E:  # eager: only for the default epilogue, written out here
            runs.append(bg.capture(lambda: F.gelu(F.linear(x, lin.weight, lin.bias), approximate="tanh") * 1.5,
                                   args.calls))
        t = bg.interleaved_ms([g.replay for g in runs], args.rounds, args.calls) + [None]
        for g in runs:
            g.reset()
        eager = f"eager {t[2]:.4f} ms  vs eager {t[2] / t[1]:.3f}x  " if t[2] else ""
        print(f"{name:36s} torch.mm {t[0]:.4f} ms  fused {t[1]:.4f} ms  fused vs mm {t[0] / t[1]:.3f}x  {eager}"
              f"({layer.plan_for(m).config.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
