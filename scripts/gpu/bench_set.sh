#!/bin/bash
# Usage: [OUT=./gpu-logs] [BUILD=./build] [ONLY=minsub,x8k,...] [TUNE_ARGS="--max-candidates 8"] [GRAPH_ARGS="--rounds 15"] scripts/gpu/bench_set.sh DB [MODES]
# On the GPU machine, with a built tree ($BUILD/fusedtune, $BUILD/libfusedtune.so.0): runs the
# default tune of each problem of the benchmark set in each mode of MODES (comma-separated, default
# bf16; "default" is fp32 tensors with no --math) into DB, `$BUILD/fusedtune --db DB tune --shape S --epilogue E --math M --quiet $TUNE_ARGS`,
# printing each tune's wall seconds, then `python3 bench/python/bench_graphs.py --db DB --math MODES`
# (FusedLinear vs torch.mm alone and eager, with CUDA graphs and call by call). The set (shape and
# epilogue of each problem, ONLY selecting some by name) comes from `bench_graphs.py --list`: it is
# defined there only. A problem already tuned in DB is not tuned again (the tune returns the stored
# best). Logs under $OUT; the table printed last. Exit status: bench_graphs.py's (0 all measured,
# 3 some not tuned, 1 a failure), 2 on a usage or setup error.
set -u
if [ $# -lt 1 ] || [ $# -gt 2 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 2
fi
# DB, and OUT and BUILD when given, are relative to the caller's folder; then to the tree's root.
DB=$(realpath -m -- "$1"); MODES=${2:-bf16}
[ -n "${OUT:-}" ] && OUT=$(realpath -m -- "$OUT")
[ -n "${BUILD:-}" ] && BUILD=$(realpath -m -- "$BUILD")
cd "$(dirname "$0")/../.." || exit 2
BUILD=$(cd "${BUILD:-build}" 2>/dev/null && pwd) || { echo "bench_set: no build folder ${BUILD:-build}" >&2; exit 2; }
[ -x "$BUILD/fusedtune" ] || { echo "bench_set: $BUILD/fusedtune is missing: build the tree first" >&2; exit 2; }
export FUSEDTUNE_LIBRARY=$BUILD   # the Python package loads the library of the same build
OUT=${OUT:-$PWD/gpu-logs}; mkdir -p "$OUT"
T=$OUT/table.txt; : > "$T"; t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
only=(); [ -n "${ONLY:-}" ] && only=(--only "$ONLY")
python3 bench/python/bench_graphs.py --list ${only[@]+"${only[@]}"} --math "$MODES" > "$OUT/set.tsv" 2> "$OUT/set.err" || {
  cat "$OUT/set.err" >&2; exit 2; }
[ -s "$OUT/set.tsv" ] || { echo "bench_set: empty problem set" >&2; exit 2; }
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); db $DB; modes $MODES; $(wc -l < "$OUT/set.tsv") problems" | tee -a "$T"
IFS=, read -ra modes <<< "$MODES"
i=0
for m in "${modes[@]}"; do
  while IFS=$'\t' read -r shape epi; do
    i=$((i + 1))
    log=$OUT/tune_$(printf %02d $i)_${m}_${shape}.log
    math=(--math "$m"); [ "$m" = default ] && math=()   # default: fp32 tensors, no --math
    # shellcheck disable=SC2086  # TUNE_ARGS is a list of options
    { echo "\$ $BUILD/fusedtune --db $DB tune --shape $shape --epilogue '$epi' ${math[*]:-} --quiet ${TUNE_ARGS:-}"; } > "$log"
    s=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$BUILD/fusedtune" --db "$DB" tune --shape "$shape" --epilogue "$epi" "${math[@]}" --quiet ${TUNE_ARGS:-} >> "$log" 2>&1 < /dev/null
    rc=$?
    e=$(date +%s.%N)
    secs=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.1f", b - a }')
    printf 'tune %-5s %-17s %-48s rc=%d %8s s  %s\n' "$m" "$shape" "'$epi'" "$rc" "$secs" \
      "$(grep -v '^\$ ' "$log" | tail -1 | cut -c1-100)" | tee -a "$T"
  done < "$OUT/set.tsv"
done
echo "== tunes done $(el)" | tee -a "$T"
# shellcheck disable=SC2086  # GRAPH_ARGS is a list of options (--rounds 15)
python3 bench/python/bench_graphs.py --db "$DB" --math "$MODES" ${only[@]+"${only[@]}"} ${GRAPH_ARGS:-} > "$OUT/bench_graphs.txt" 2>&1
rc=$?
{ echo "== bench_graphs rc=$rc $(el)"; cat "$OUT/bench_graphs.txt"; echo "== total $(el)"; } >> "$T"
echo
cat "$T"
exit $rc
