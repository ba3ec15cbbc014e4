#!/bin/bash
# Usage: [OUT=DIR] scripts/gpu/smoke.sh
# A GPU machine's check before a commit is called done: every GPU test but the long fp32 variant
# sweep (FT_TEST_QUICK), then a bf16 tune -> query -> bench of minsub through the CLI.
# Logs: $OUT/final.txt (OUT default ./h200-logs). SQLITE_INCLUDE as for scripts/gpu/build.sh.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-logs}; mkdir -p "$OUT"
A=$OUT/final.txt
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 ))s"; }
rm -f "$A"
. scripts/gpu/build.sh "$A"
echo "== build done $(el)"
FT_TEST_QUICK=1 timeout 300 ctest --test-dir build -L gpu -E variants --output-on-failure >> "$A" 2>&1; echo "ctest -L gpu -E variants (quick tc) rc=$? $(el)"
grep -E "Test +#|tests passed" "$A" | tail -8; grep -E "^summary" "$A" | tail -2
export FUSEDTUNE_DB=$OUT/f.db
timeout 60 ./build/fusedtune tune --shape 128x16384x16384 --epilogue minsub --math bf16 --quiet >> "$A" 2>&1; echo "tune bf16 rc=$? $(el)"; grep "^best" "$A" | tail -1
timeout 20 ./build/fusedtune query --shape 128x16384x16384 --epilogue minsub --math bf16 >> "$A" 2>&1; echo "query rc=$?"
timeout 60 ./build/fusedtune bench --shape 128x16384x16384 --epilogue minsub --math bf16 > "$OUT/b.txt" 2>&1; echo "bench rc=$?"; cat "$OUT/b.txt"; cat "$OUT/b.txt" >> "$A"
rm -f "$OUT"/f.db* "$OUT/b.txt"
echo "== total $(el)"
