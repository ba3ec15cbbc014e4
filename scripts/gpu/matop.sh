#!/bin/bash
# Matrix operands on the GPU machine, in one batch: gpu_test_matop, tunes and the CUDA-graph
# benchmark of the residual problems, then gpu_test_modes for at most MODES_S seconds.
#   scripts/gpu/matop.sh BUILD OUT [BUDGET_S [MODES_S]]   (MODES_S 0: no gpu_test_modes;
#   FT_TEST_SAMPLE=N: variants of each kind per gpu_test_matop case)
# BUILD: a build tree of this checkout; OUT: where logs and the database go.
set -u
B=$1 OUT=$2 BUDGET=${3:-25} MODES_S=${4:-600}
DB=$OUT/matop.db
export FUSEDTUNE_LIBRARY=$B/libfusedtune.so PYTHONUNBUFFERED=1
t0=$(date +%s)
(cd "$B" && ./tests/gpu_test_matop) > "$OUT/gpu_test_matop.log" 2>&1
echo "gpu_test_matop rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "FAIL|matrix operands" "$OUT/gpu_test_matop.log" | head -20
tune() { "$B/fusedtune" --db "$DB" tune --shape "$1" --epilogue "$2" --math "$3" --budget "$BUDGET" >> "$OUT/tune.log" 2>&1;
         echo "tune $1 '$2' $3 rc=$? ($(( $(date +%s) - t0 )) s)"; }
for m in bf16 fp16; do
  tune 4096x4096x14336 'x + r where mat r' $m
  tune 16x4096x14336 'x + r where mat r' $m
done
python3 bench/python/bench_graphs.py --db "$DB" --math bf16,fp16 --only res4k,res16 --rounds 15 > "$OUT/bench.log" 2>&1
echo "bench rc=$? ($(( $(date +%s) - t0 )) s)"
cat "$OUT/bench.log"
[ "$MODES_S" = 0 ] && exit 0
(cd "$B" && timeout "$MODES_S" ./tests/gpu_test_modes) > "$OUT/gpu_test_modes.log" 2>&1
echo "gpu_test_modes rc=$? (124: stopped at ${MODES_S} s) ($(( $(date +%s) - t0 )) s)"; grep -E "FAIL|x \+ bias \+ r" "$OUT/gpu_test_modes.log" | head -20
