#!/bin/bash
# Second GPU pass of the session (docs/BENCHMARKS.md): the tensor-core test with every epilogue,
# compute-sanitizer memcheck and racecheck on a small shape, the fp32 regression tests, and the
# seed problems tuned again with every result exported. Logs: $OUT/all.txt, $OUT/results.csv.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/h200-logs}; mkdir -p "$OUT"
A=$OUT/all.txt
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 ))s"; }
rm -f "$A"
. scripts/h200_build.sh "$A"
echo "== build done $(el)"
echo "=== gpu_test_tc" >> "$A"; timeout 150 ./build/tests/gpu_test_tc >> "$A" 2>&1; echo "gpu_test_tc (all epilogues) rc=$? $(el)"
grep -E "^summary" "$A" | tail -1; grep -E "failed;" "$A" | grep -v " 0 failed" | head -5
for tool in memcheck racecheck; do
  echo "=== $tool" >> "$A"
  FT_TEST_QUICK=1 FT_TEST_SHAPE=129x264x40 timeout 120 compute-sanitizer --tool $tool --print-limit 20 ./build/tests/gpu_test_tc >> "$A" 2>&1
  echo "$tool gpu_test_tc 129x264x40 rc=$? $(el)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Race reported|^summary" "$A" | tail -2
done
export FUSEDTUNE_DB=$OUT/tc2.db
for job in "128x16384x16384 minsub" "1024x8192x8192 biasrelu"; do
  set -- $job
  for m in bf16 tf32; do
    echo "=== tune $1 $2 $m" >> "$A"
    timeout 100 ./build/fusedtune tune --shape $1 --epilogue $2 --math $m >> "$A" 2>&1; echo "tune $1 $2 $m rc=$? $(el)"
    echo "=== bench $1 $2 $m" >> "$A"
    timeout 60 ./build/fusedtune bench --shape $1 --epilogue $2 --math $m > "$OUT/b.txt" 2>&1; cat "$OUT/b.txt" >> "$A"
    grep -E "^  (eager|cuBLAS GEMM|tc_|epi_)|best vs|fastest fused" "$OUT/b.txt"
  done
done
./build/fusedtune export --format csv --out "$OUT/results.csv" >> "$A" 2>&1; echo "export rc=$?"
unset FUSEDTUNE_DB
echo "=== variants quick" >> "$A"; FT_TEST_QUICK=1 timeout 100 ./build/tests/gpu_test_variants >> "$A" 2>&1; echo "gpu_test_variants quick rc=$? $(el)"; grep "^summary" "$A" | tail -1
echo "=== robust" >> "$A"; FT_CLI=$PWD/build/fusedtune timeout 90 ./build/tests/gpu_test_robust >> "$A" 2>&1; echo "gpu_test_robust rc=$? $(el)"
rm -f "$OUT/b.txt" "$OUT"/tc2.db*
echo "== total $(el)"
