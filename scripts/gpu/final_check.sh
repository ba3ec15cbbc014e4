#!/bin/bash
# Usage: [OUT=DIR] scripts/gpu/final_check.sh
# The merged tree's short GPU check: build; the tensor-core kernels through the launch path
# (gpu_test_tc, quick, bf16 and 3xtf32: the tensor maps are encoded by src/gpu/launch.c); the fp32
# default (gpu_test_api); the README main job cold then warm (a repeat measures nothing); the
# whole-model tests (python_gpu_capture) and the reduction tests when time allows. Table last.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-logs}; mkdir -p "$OUT"
T=$OUT/table.txt; : > "$T"; t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$T"
. scripts/gpu/build.sh "$OUT/build.log"
echo "build $(el)" | tee -a "$T"
for mode in ${MODES:-bf16 3xtf32}; do
  FT_TEST_MODE=$mode FT_TEST_QUICK=1 timeout 150 ./build/tests/gpu_test_tc > "$OUT/tc_$mode.txt" 2>&1
  echo "gpu_test_tc $mode quick rc=$? $(el): $(grep -E '^summary' "$OUT/tc_$mode.txt" | cut -c1-150)" | tee -a "$T"
  grep -iE "fail" "$OUT/tc_$mode.txt" | head -3 >> "$T"
done
timeout 120 ./build/tests/gpu_test_api > "$OUT/api.txt" 2>&1; echo "gpu_test_api rc=$? $(el)" | tee -a "$T"
grep -E "served at|assert" "$OUT/api.txt" | head -3 >> "$T"
export FUSEDTUNE_DB=$OUT/f.db
now() { date +%s.%N; }
s0=$(now); ./build/fusedtune tune --shape 128x16384x16384 --epilogue minsub > "$OUT/cold.txt" 2>&1
echo "main job cold rc=$? $(awk "BEGIN{print $(now) - $s0}") s" | tee -a "$T"; grep -E "M 128 " "$OUT/cold.txt" >> "$T"
s0=$(now); ./build/fusedtune tune --shape 128x16384x16384 --epilogue minsub > "$OUT/warm.txt" 2>&1
echo "main job warm rc=$? $(awk "BEGIN{print $(now) - $s0}") s" | tee -a "$T"; grep -E "M 128 |nothing to do" "$OUT/warm.txt" >> "$T"
for t in ${MORE:-}; do
  timeout 200 ctest --test-dir build -R "^$t\$" --output-on-failure > "$OUT/$t.txt" 2>&1
  echo "$t rc=$? $(el): $(grep -E 'tests passed|Passed|Failed' "$OUT/$t.txt" | tail -1)" | tee -a "$T"
done
echo "total $(el)" | tee -a "$T"
echo; cat "$T"
