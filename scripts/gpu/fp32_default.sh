#!/bin/bash
# Usage: [OUT=DIR] scripts/gpu/fp32_default.sh
# fp32 at fp32 accuracy (issue 55) on the GPU machine: the build, the GPU tests that tune fp32 by
# default (api, reduce, modes), the README's main job cold and warm with default options, then
# query/bench, FusedLinear against eager in fp32 (tests/python/bench_torch.py), and the GEMM alone
# (epilogue none, default mode) beside cuBLAS SGEMM at the issue's shapes. Logs under $OUT; the
# table printed last.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-logs}; mkdir -p "$OUT"
T=$OUT/table.txt; : > "$T"; t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee -a "$T"
. scripts/gpu/build.sh "$OUT/build.log"
echo "build $(el)" | tee -a "$T"
for t in gpu_test_api ${TESTS:-}; do
  timeout 240 ./build/tests/$t > "$OUT/$t.txt" 2>&1; echo "$t rc=$? $(el)" | tee -a "$T"
  grep -E "served at|FAIL|assert" "$OUT/$t.txt" | head -5 >> "$T"
done
export FUSEDTUNE_DB=$OUT/f.db
ft=./build/fusedtune
s0=$(date +%s.%N); $ft tune --shape 128x16384x16384 --epilogue minsub > "$OUT/tune_cold.txt" 2>&1; rc=$?
echo "README main job cold: rc=$rc $(awk "BEGIN{print $(date +%s.%N) - $s0}") s" | tee -a "$T"
grep -E "left out|^best|served|M 128 " "$OUT/tune_cold.txt" | tee -a "$T"
s0=$(date +%s.%N); $ft tune --shape 128x16384x16384 --epilogue minsub > "$OUT/tune_warm.txt" 2>&1
echo "README main job warm: $(awk "BEGIN{print $(date +%s.%N) - $s0}") s" | tee -a "$T"
$ft query --shape 128x16384x16384 --epilogue minsub 2>&1 | head -4 | tee -a "$T"
$ft bench --shape 128x16384x16384 --epilogue minsub 2>&1 | tee -a "$T"
for s in ${GEMMS:-1024x8192x8192 2048x4096x8192 1000x4000x3000}; do
  $ft tune --shape $s --quiet > "$OUT/tune_$s.txt" 2>&1
  echo "GEMM alone $s: $(grep -E '^  M ' "$OUT/tune_$s.txt" | tail -1)" | tee -a "$T"
  $ft bench --shape $s 2>&1 | grep -E "cuBLAS GEMM alone|^  [a-z]" | tee -a "$T"
done
$ft tune --shape 128x16384x16384 --epilogue 'min(x + bias, c) - c where c = 2' --quiet > "$OUT/t1.txt" 2>&1
$ft tune --shape 1024x8192x8192 --epilogue 'relu(x + bias)' --quiet > "$OUT/t2.txt" 2>&1
echo "FusedLinear fp32 (default: fp32 accuracy) vs eager $(el)" | tee -a "$T"
timeout 300 python3 tests/python/bench_torch.py --db "$FUSEDTUNE_DB" --math fp32 2>&1 | tee "$OUT/bench_torch.txt" | tail -12 >> "$T"
echo "total $(el)" | tee -a "$T"
echo; cat "$T"
