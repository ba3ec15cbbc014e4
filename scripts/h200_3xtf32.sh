#!/bin/bash
# 3xtf32 on the H200: the tensor-core GPU test in that mode (ragged shapes, the long-K check),
# then tunes and benches at the seed shapes and at 128x4096x65536. Logs: $OUT/x3.txt; the table
# printed last. With arg "auto" (or "auto-only": this part alone): fp32 and tf32 tuned beside
# (budget $BUDGET, default 60 s), then query --tolerance.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/h200-logs}; mkdir -p "$OUT"
A=$OUT/x3.txt
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 ))s"; }
. scripts/h200_build.sh "$A"
echo "== build done $(el)"
export FUSEDTUNE_DB=${FUSEDTUNE_DB:-$OUT/x3.db}
stage=${1:-}
shapes=("128x16384x16384 minsub" "1024x8192x8192 biasrelu" "128x4096x65536 none")
if [ "$stage" != "auto-only" ]; then
  FT_TEST_MODE=3xtf32 timeout 240 ./build/tests/gpu_test_tc > "$OUT/tc.txt" 2>&1; echo "gpu_test_tc 3xtf32 rc=$? $(el)"
  grep -E "^3xtf32|^summary|rel_err" "$OUT/tc.txt" | tail -4; grep -c "failed" "$OUT/tc.txt"; cat "$OUT/tc.txt" >> "$A"; rm -f "$OUT/tc.txt"
  for s in "${shapes[@]}"; do
    set -- $s
    timeout 150 ./build/fusedtune tune --shape $1 --epilogue $2 --math 3xtf32 --budget 100 --quiet > "$OUT/t.txt" 2>&1
    echo "tune 3xtf32 $1 $2 rc=$? $(el)"; grep -E "^  (eager|cublas|fused|cublas\+ep)" "$OUT/t.txt" | head -6; cat "$OUT/t.txt" >> "$A"
    timeout 60 ./build/fusedtune bench --shape $1 --epilogue $2 --math 3xtf32 > "$OUT/t.txt" 2>&1; echo "bench rc=$?"; cat "$OUT/t.txt"; cat "$OUT/t.txt" >> "$A"
  done
fi
if [ "$stage" = "auto" ] || [ "$stage" = "auto-only" ]; then
  for s in "${shapes[@]:0:2}"; do
    set -- $s
    for m in fp32 tf32; do
      timeout 150 ./build/fusedtune tune --shape $1 --epilogue $2 --math $m --budget ${BUDGET:-60} --quiet > "$OUT/t.txt" 2>&1
      echo "tune $m $1 $2 rc=$? $(el)"; grep -E "^  (eager|cublas) " "$OUT/t.txt" | head -3; cat "$OUT/t.txt" >> "$A"
    done
    for tol in 1e-5 1e-3; do
      echo "-- query $1 $2 --tolerance $tol"; ./build/fusedtune query --shape $1 --epilogue $2 --tolerance $tol 2>&1 | grep -E "problem|variant|median|error"
    done
  done
fi
rm -f "$OUT/t.txt"
echo "== total $(el)"
