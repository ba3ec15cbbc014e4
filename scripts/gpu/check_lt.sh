#!/bin/bash
# Usage: scripts/gpu/check_lt.sh   (on the GPU machine, the tree built in ./build)
# Tunes problems whose epilogue adds a bias or begins with relu / gelu_tanh (their epilogue passes
# include the ones after cuBLASLt's bias GEMM, "_lt", or its activation epilogues, "_ltr", "_ltbg"...), prints every pass result (status, ms, ratio to the GEMM) and the
# stored best, then bench_graphs.py on the decode-shaped `x + bias`. Logs under $OUT.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-logs}; mkdir -p "$OUT"
DB=$OUT/lt.db; rm -f "$DB"
for j in "64x6144x4096:x + bias:bf16" "1024x8192x8192:biasrelu:bf16" "128x1000x1000:minsub:fp32" "512x11008x4096:silu(x + bias):fp16" "1024x8192x8192:gelu_tanh(x + bias) * 1.5:bf16" "1024x8192x8192:gelu_tanh(x + bias):fp16" "512x4096x4096:relu(x) * 2:tf32" "256x4096x4096:gelu_tanh(x):fp32"; do
  IFS=: read -r s e m <<< "$j"
  timeout 120 ./build/fusedtune --db "$DB" tune --shape "$s" --epilogue "$e" --math "$m" --quiet > "$OUT/t.txt" 2>&1
  echo "tune $s '$e' $m rc=$? $(tail -1 "$OUT/t.txt" | cut -c1-150)"
done
./build/fusedtune --db "$DB" export --format csv > "$OUT/lt.csv"
python3 - "$OUT/lt.csv" <<'PY'
import csv, re, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["strategy"] == "cublas+epilogue"]
by = {}
for r in rows:
    by.setdefault((r["m"], r["n"], r["k"], r["math"]), []).append(r)
for key, rs in by.items():
    lt = [r for r in rs if "_lt" in r["variant"]]
    bad = [r for r in rs if r["status"] != "ok"]
    best = lambda xs: min((float(r["gemm_ratio"] or 9), r["variant"], r["rel_err"]) for r in xs if r["status"] == "ok") if any(r["status"] == "ok" for r in xs) else None
    print(key, "passes", len(rs), "lt", len(lt), "not ok", [(r["variant"], r["status"], r["message"][:80]) for r in bad][:4])
    forms = {}
    for r in lt:
        forms.setdefault(re.search(r"_lt[bgr]*", r["variant"]).group(0).strip("_"), []).append(r)
    print("   best plain", best([r for r in rs if "_lt" not in r["variant"]]), *[f" best {f}: {best(v)}" for f, v in sorted(forms.items())])
PY
FUSEDTUNE_LIBRARY=$PWD/build timeout 90 python3 bench/python/bench_graphs.py --db "$DB" --only bias64,biasrelu --math bf16 2>&1 | tail -4
