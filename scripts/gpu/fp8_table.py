"""Per fp8 tune in a results CSV (fusedtune export --format csv; scripts/gpu/fp8.sh): the
baselines, the best fused kernel, and the best of each kernel form (one partial sum or two,
ping-pong with 64- or 128-row tiles per consumer, BN > 128), each as median ms and its ratio to
cuBLASLt's fp8 GEMM alone timed beside it.

    python3 scripts/gpu/fp8_table.py RESULTS.csv
"""
import csv
import re
import sys


def form(variant):
    if variant.startswith("tc_"):
        bn = int(re.search(r"_bn(\d+)_", variant).group(1))
        two = re.search(r"_h\d+d", variant) is not None
        pp = "" if "_pp_" not in variant else " pp" + ("1" if variant.startswith("tc_bm64_") else "2")
        return ("dual" if two else "single") + pp + (" bn>128" if bn > 128 else "")
    return None


def main():
    rows = list(csv.DictReader(open(sys.argv[1], newline="")))
    shapes = {}
    for r in rows:
        key = f"{r['m']}x{r['n']}x{r['k']}"
        shapes.setdefault(key, []).append(r)
    for key, rs in shapes.items():
        ok = [r for r in rs if r["status"] == "ok" and r["median_ms"]]
        bad = [r for r in rs if r["status"] != "ok"]
        print(f"== {key}: {len(ok)} timed, {len(bad)} not ok "
              f"({', '.join(sorted(set(r['status'] for r in bad))) or '-'})")
        best = {}
        for r in ok:
            g = r["strategy"] if r["strategy"] != "fused" else "fused " + form(r["variant"])
            if g not in best or float(r["median_ms"]) < float(best[g]["median_ms"]):
                best[g] = r
        for g, r in sorted(best.items(), key=lambda t: float(t[1]["median_ms"])):
            print(f"  {g:22s} {float(r['median_ms']):.4f} ms  vs GEMM {r['gemm_ratio'] or '-':>8.8s}  {r['variant']}")


if __name__ == "__main__":
    main()
