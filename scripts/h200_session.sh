#!/bin/bash
# The GPU checks of the tensor-core session on the H200 (docs/BENCHMARKS.md): build, the
# tensor-core and math-mode GPU tests, tunes and benches of the seed problems in bf16 and tf32,
# 8192^3 in both, the bf16 example. Logs under $OUT (default ./h200-logs); a table at the end.
# SQLITE_INCLUDE: a folder with sqlite3.h (that machine has the runtime only).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/h200-logs}
L=$OUT/log; mkdir -p "$L"
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 ))s"; }
. scripts/h200_build.sh "$L/build.txt"
echo "== build done $(el)"
FT_TEST_QUICK=${TC_QUICK:-1} timeout 150 ./build/tests/gpu_test_tc > "$L/gpu_test_tc.txt" 2>&1; echo "gpu_test_tc rc=$? $(el)"
grep -E "failed; |summary|FAIL|Assert" "$L/gpu_test_tc.txt" | grep -v " 0 failed" | head -20; tail -1 "$L/gpu_test_tc.txt"
export FUSEDTUNE_DB=$L/tc.db
for job in "128x16384x16384 minsub" "1024x8192x8192 biasrelu" "8192x8192x8192 none"; do
  set -- $job
  for m in bf16 tf32; do
    timeout 120 ./build/fusedtune tune --shape $1 --epilogue $2 --math $m --quiet > "$L/tune_${2}_$m.txt" 2>&1
    echo "tune $1 $2 $m rc=$? $(el)"; grep -E "^best|compile:" "$L/tune_${2}_$m.txt"
    timeout 60 ./build/fusedtune bench --shape $1 --epilogue $2 --math $m > "$L/bench_${2}_$m.txt" 2>&1
    echo "bench rc=$?"; cat "$L/bench_${2}_$m.txt"
  done
done
timeout 60 ./build/examples/bf16_linear "$L/tc.db" > "$L/example_bf16.txt" 2>&1 || true; echo "example: $(cat $L/example_bf16.txt | tail -3)"
timeout 100 ./build/tests/gpu_test_modes > "$L/gpu_test_modes.txt" 2>&1; echo "gpu_test_modes rc=$? $(el)"; tail -4 "$L/gpu_test_modes.txt"
unset FUSEDTUNE_DB
timeout 80 ctest --test-dir build -R "gpu_test_(tune|api|epilogue)$" > "$L/ctest_fp32.txt" 2>&1; echo "ctest tune/api/epilogue rc=$? $(el)"; grep -E "Test +#|tests passed" "$L/ctest_fp32.txt"
echo "== total $(el)"
