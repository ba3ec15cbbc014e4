#!/bin/bash
# Usage: [OUT=DIR] [TUNE_BUDGET=35] [STRATEGY=fast] [MAX_S=330] [TEST=1] scripts/gpu/fp8.sh
# issue 41's fp8 measurement (docs/BENCHMARKS.md): the build, a tune in fp8 (search STRATEGY) of
# the scaled epilogue at the four target shapes into one database, bench/python/bench_fp8.py on it
# (CUDA graphs, interleaved rounds, medians), then with TEST=1 gpu_test_fp8 (every enumerated fp8
# variant on ragged shapes) in the time left before MAX_S seconds (build included). Logs, the tunes' results as
# CSV ($OUT/results.csv) and a table (scripts/gpu/fp8_table.py) under $OUT; the table is printed
# last. SQLITE_INCLUDE as for scripts/gpu/build.sh.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-logs}
TB=${TUNE_BUDGET:-35}
STRATEGY=${STRATEGY:-fast}
MAX_S=${MAX_S:-330}
LOG=$OUT/fp8.log
mkdir -p "$OUT"
: > "$LOG"
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
. scripts/gpu/build.sh "$LOG"
echo "== build done [$(el)s]"
DB=$(mktemp -d /tmp/ft_fp8.XXXXXX)/fp8.db
E='relu(x * sx * sw + bias) where row sx, col sw'
for S in 16x14336x4096 128x16384x16384 1024x8192x8192 4096x14336x4096; do
  timeout $((TB + 60)) stdbuf -oL ./build/fusedtune --db "$DB" tune --math fp8 --shape "$S" --epilogue "$E" \
    --budget "$TB" --strategy "$STRATEGY" > "$OUT/tune_$S.log" 2>&1
  echo "tune $S rc=$? [$(el)s]"
done
./build/fusedtune --db "$DB" export --format csv --out "$OUT/results.csv"
timeout 120 stdbuf -oL python3 bench/python/bench_fp8.py --db "$DB" --rounds 15 --calls 20 > "$OUT/bench.log" 2>&1
echo "bench_fp8 rc=$? [$(el)s]"
left=$(( MAX_S - $(el) ))
if [ "${TEST:-1}" = 1 ] && [ "$left" -gt 20 ]; then
  timeout "$left" stdbuf -oL ./build/tests/gpu_test_fp8 > "$OUT/gpu_test_fp8.log" 2>&1
  echo "gpu_test_fp8 rc=$? (124: cut at ${left}s) [$(el)s]"
  grep -E "variants,|fp8 kernels:|FAIL" "$OUT/gpu_test_fp8.log" | head -30
else
  echo "gpu_test_fp8 skipped (TEST=${TEST:-1}, ${left}s left)"
fi
tail -12 "$OUT/bench.log"
python3 scripts/gpu/fp8_table.py "$OUT/results.csv"
