#!/bin/bash
# Usage: [OUT=DIR] [KB=.kb/level2 KB_ONLY=68,76] [GEMMS="MxNxK ..."] [TESTS="gpu_test_x ..."] scripts/gpu/fp32_default.sh
# fp32 at fp32 accuracy (issue 55) and whole models (issue 54) on the GPU machine, most important
# first: the build; the README's main job cold and warm with default options, query, bench;
# KernelBench problem files (KB: a folder of them, carried, not in the repository) through
# bench/python/bench_kernelbench.py --tune; FusedLinear fp32 against eager (bench_torch.py); the
# GPU tests named; the GEMM alone (epilogue none, default mode) beside cuBLAS SGEMM. Logs under
# $OUT; the table ($OUT/table.txt) printed last.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-logs}; mkdir -p "$OUT"
T=$OUT/table.txt; : > "$T"; t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee -a "$T"
git log --oneline -1 2>/dev/null | tee -a "$T"
. scripts/gpu/build.sh "$OUT/build.log"
echo "build $(el)" | tee -a "$T"
export FUSEDTUNE_DB=$OUT/f.db PYTHONUNBUFFERED=1
ft=./build/fusedtune
now() { date +%s.%N; }
s0=$(now); $ft tune --shape 128x16384x16384 --epilogue minsub > "$OUT/tune_cold.txt" 2>&1; rc=$?
echo "README main job cold: rc=$rc $(awk "BEGIN{print $(now) - $s0}") s" | tee -a "$T"
grep -E "left out|^best|M 128 " "$OUT/tune_cold.txt" | tee -a "$T"
s0=$(now); $ft tune --shape 128x16384x16384 --epilogue minsub > "$OUT/tune_warm.txt" 2>&1
echo "README main job warm: $(awk "BEGIN{print $(now) - $s0}") s" | tee -a "$T"
$ft query --shape 128x16384x16384 --epilogue minsub 2>&1 | head -4 | tee -a "$T"
$ft bench --shape 128x16384x16384 --epilogue minsub 2>&1 | tee -a "$T"
if [ -n "${KB:-}" ]; then
  echo "KernelBench ${KB} ${KB_ONLY:-all} $(el)" | tee -a "$T"
  timeout ${KB_TIMEOUT:-240} python3 bench/python/bench_kernelbench.py --kb "$KB" --only "${KB_ONLY:-}" --tune --budget 40 \
    --trials ${KB_TRIALS:-50} > "$OUT/kernelbench.txt" 2>&1; echo "rc=$? $(el)" | tee -a "$T"
  sed -n '/^NVIDIA\|^problem/,$p' "$OUT/kernelbench.txt" | tee -a "$T"
fi
if [ -n "${TORCH_BENCH-1}" ]; then
  $ft tune --shape 128x16384x16384 --epilogue 'min(x + bias, c) - c where c = 2' --quiet > "$OUT/t1.txt" 2>&1
  $ft tune --shape 1024x8192x8192 --epilogue 'relu(x + bias)' --quiet > "$OUT/t2.txt" 2>&1
  echo "FusedLinear fp32 (default: fp32 accuracy) vs eager $(el)" | tee -a "$T"
  timeout 200 python3 bench/python/bench_torch.py --db "$FUSEDTUNE_DB" --math fp32 > "$OUT/bench_torch.txt" 2>&1
  tail -8 "$OUT/bench_torch.txt" >> "$T"
fi
for t in ${TESTS:-}; do
  timeout 240 ./build/tests/$t > "$OUT/$t.txt" 2>&1; echo "$t rc=$? $(el)" | tee -a "$T"
  grep -E "served at|FAIL|assert" "$OUT/$t.txt" | head -5 >> "$T"
done
for s in ${GEMMS:-}; do
  $ft tune --shape $s --quiet > "$OUT/tune_$s.txt" 2>&1
  $ft bench --shape $s 2>&1 | grep -E "cuBLAS GEMM alone|^  [a-z]|^NVIDIA" | sed "s/^/$s /" | tee -a "$T"
done
echo "total $(el)" | tee -a "$T"
echo; cat "$T"
