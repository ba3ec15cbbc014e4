#!/bin/bash
# Usage: OUT=DIR [SET=minsub,biasrelu] scripts/gpu/presplit_default.sh
# 3xtf32's pre-split form once it is in the default space (docs/BENCHMARKS.md 2026-12-06 (h)), most
# important first: the build; gpu_test_tc_presplit (its bits against the in-kernel twin, the weight
# cache, CUDA-graph captures); the README main job on a fresh database, cold then warm; the set's
# fp32 problems tuned by default and timed in CUDA graphs against torch.mm and eager
# (scripts/gpu/bench_set.sh); gpu_test_fp8_gated after fp8's chain tolerance. Logs under $OUT; the
# table printed last.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:?OUT=DIR}; mkdir -p "$OUT"; T=$OUT/table.txt; : > "$T"; t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$T"
. scripts/gpu/build.sh "$OUT/build.log"; echo "build $(el)" | tee -a "$T"
test_row() { # name limit
  timeout "$2" "./build/tests/$1" > "$OUT/$1.txt" 2>&1; echo "$1 rc=$? $(el)" | tee -a "$T"
  grep -E "variants|graphs|checked|correct|assertion" "$OUT/$1.txt" | cut -c1-200 | tail -6 >> "$T"
}
test_row gpu_test_tc_presplit 120
rm -f /tmp/main_job.db
for run in cold warm; do
  s0=$(date +%s.%N)
  ./build/fusedtune --db /tmp/main_job.db tune --shape 128x16384x16384 --epilogue minsub > "$OUT/main_$run.txt" 2>&1
  echo "main job $run rc=$? $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $s0}") s" | tee -a "$T"
done
grep -A2 "^served" "$OUT/main_cold.txt" | head -3 >> "$T"
OUT=$OUT/set ONLY=${SET:-minsub,biasrelu} timeout 200 scripts/gpu/bench_set.sh /tmp/fp32_set.db fp32 > "$OUT/set.txt" 2>&1
echo "bench set fp32 rc=$? $(el)" | tee -a "$T"; tail -12 "$OUT/set.txt" >> "$T"
test_row gpu_test_fp8_gated 110
echo "total $(el)" | tee -a "$T"
echo; cat "$T"
