#!/bin/bash
# The tc family's split-K on the H200: gpu_test_tc in every mode (FT_TEST_QUICK: one epilogue;
# 3xtf32 with the long-K check), then exhaustive tunes at 128x4096x65536 where 64 tiles leave
# half the SMs idle. Logs: $OUT/sk.txt; the short lines printed.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/h200-logs}; mkdir -p "$OUT"
A=$OUT/sk.txt
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 ))s"; }
. scripts/h200_build.sh "$A"
FT_TEST_QUICK=1 timeout 300 ./build/tests/gpu_test_tc > "$OUT/tc.txt" 2>&1; echo "gpu_test_tc (quick) rc=$? $(el)"
grep -E "^3xtf32|^summary" "$OUT/tc.txt"; grep "gpu_test_tc.c" "$OUT/tc.txt" | head -5; cat "$OUT/tc.txt" >> "$A"; rm -f "$OUT/tc.txt"
export FUSEDTUNE_DB=$OUT/sk.db
for m in ${MODES:-3xtf32 bf16 tf32}; do
  timeout 120 ./build/fusedtune tune --shape 128x4096x65536 --epilogue none --math $m --strategy exhaustive --quiet > "$OUT/t.txt" 2>&1
  echo "tune $m rc=$? $(el)"; grep -E "^  (cublas_gemm|eager|fused|cublas\+epilogue) " "$OUT/t.txt" | head -4; cat "$OUT/t.txt" >> "$A"
done
rm -f "$OUT"/t.txt "$OUT"/sk.db*
echo "== total $(el)"
