#!/bin/bash
# Usage: [OUT=DIR] [MAX_S=345] [SKIP_BUILD=1] scripts/gpu/batch.sh
# `tune --problems FILE --devices all` on a GPU machine (one device on a one-GPU machine).
#
# Builds (scripts/gpu/build.sh), runs gpu_test_batch (five problems with --devices all, every
# problem stored once; the same file interrupted by SIGINT after the first progress line and run
# again: complete, nothing measured twice) and test_problems / test_schedule, then a five-problem
# file of model-like shapes with --devices all on a fresh database, printing its summary and
# wall time, and the same command again (everything measured: it should take seconds). A guard
# (MAX_S, default 345 s from the start) skips what would not fit in 6 minutes. Logs: $OUT/batch.log
# (every command's output), $OUT/batch_table.txt (the table printed last). SQLITE_INCLUDE as for
# scripts/gpu/build.sh.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-logs}
mkdir -p "$OUT"
LOG=$OUT/batch.log
TABLE=$OUT/batch_table.txt
MAX_S=${MAX_S:-345}
: > "$LOG"
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
case "${1:-}" in -h|--help) sed -n 2,14p "$0"; exit 0 ;; esac

[ "${SKIP_BUILD:-0}" = 1 ] || . scripts/gpu/build.sh "$LOG"
echo "== build done $(el)s"
FT=${FT_BIN:-./build/fusedtune}
$FT devices >> "$LOG" 2>&1
: > "$TABLE"

timeout 200 ctest --test-dir build -R "^(gpu_test_batch|test_problems|test_schedule)$" --output-on-failure >> "$LOG" 2>&1
rc=$?
echo "ctest gpu_test_batch test_problems test_schedule rc=$rc [$(el)s]"
printf "%-44s %s\n" "ctest gpu_test_batch+test_problems+test_schedule" "rc=$rc ($(el)s)" >> "$TABLE"
grep -E "Test +#|tests passed|-- (one run|interrupted run|continued)|candidate results|FAIL|failed" "$LOG" | head -20

DBDIR=$(mktemp -d /tmp/ft_batch.XXXXXX)
cat > "$DBDIR/model.csv" <<'CSV'
shape,epilogue,math
512x4096x4096,biasgelu,bf16
512x11008x4096,biassilu,bf16
512x4096x11008,x,bf16
128x4096x4096,biasrelu,fp32
128x4096x4096,"relu(x + bias)",fp32
256x1024x1024,minsub,tf32
CSV
batch() {
  local name=$1 lim=$2
  if [ $(( $(el) + lim )) -gt "$MAX_S" ]; then
    printf "%-44s skipped: %ss used, %ss allowed\n" "$name" "$(el)" "$MAX_S" >> "$TABLE"; return
  fi
  echo "---- [$(el)s] $name" >> "$LOG"
  local a b
  a=$(date +%s.%N)
  timeout "$lim" $FT --db "$DBDIR/model.db" tune --problems "$DBDIR/model.csv" --devices all --budget 15 \
    > "$DBDIR/out.txt" 2>> "$LOG"
  local rc=$?
  b=$(date +%s.%N)
  cat "$DBDIR/out.txt" >> "$LOG"
  local wall
  wall=$(python3 -c "print(f'{$b - $a:.1f}')")
  echo "== $name: rc=$rc wall ${wall}s  [$(el)s]"
  cat "$DBDIR/out.txt"
  printf "%-44s rc=%s wall %ss\n" "$name" "$rc" "$wall" >> "$TABLE"
  grep -E "^  [0-9]+x|^  #|^wall" "$DBDIR/out.txt" | cut -c1-160 >> "$TABLE"
}
batch "model.csv, 5 problems, --devices all" 150
batch "model.csv again (all measured)" 40
$FT --db "$DBDIR/model.db" export --format csv > "$DBDIR/model_export.csv" 2>> "$LOG"
python3 - "$DBDIR/model_export.csv" >> "$TABLE" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
cand = [r for r in rows if r["strategy"] in ("fused", "cublas+epilogue")]
keys = collections.Counter((r["m"], r["n"], r["k"], r["math"], r["epilogue_hash"], r["strategy"], r["variant"], r["source_hash"]) for r in cand)
probs = {(r["m"], r["n"], r["k"], r["math"], r["epilogue_hash"]) for r in rows}
print(f"export: {len(probs)} problem(s), {len(cand)} candidate result(s), {sum(1 for v in keys.values() if v > 1)} stored twice")
PY
rm -rf "$DBDIR"
echo "== total $(el)s"
echo "targets: ctest rc=0; 5 problems ok; the second run measures nothing (seconds); export: 5 problems, 0 stored twice"
cat "$TABLE"
