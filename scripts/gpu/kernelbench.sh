#!/bin/bash
# Usage: KB=.kb/level2 [DTYPE=fp32|bf16] [PART=1 PARTS=4 | ONLY=12,68] [TRIALS=100] [BUDGET=40] [ARGS=--graphs] scripts/gpu/kernelbench.sh
# Issue 54's acceptance set, a part at a time (one command stays under the device's 10 minutes):
# the KernelBench problem files in $KB (carried, not in the repository; e.g. level2's 37 GEMM-first
# files) split into PARTS parts by their order, part PART tuned (fusedtune.torch.tune, BUDGET s a
# problem) and timed against eager and torch.compile by bench/python/bench_kernelbench.py. The
# database lives in /tmp/kb_$DTYPE.db on the device, so the parts of one warm machine share it.
# Logs under $OUT; the table printed last.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-logs}; mkdir -p "$OUT"
: "${KB:?KB names the folder of KernelBench problem files}"
DTYPE=${DTYPE:-fp32}; PART=${PART:-1}; PARTS=${PARTS:-1}
[ -x build/fusedtune ] || . scripts/gpu/build.sh "$OUT/build.log"
mapfile -t all < <(ls "$KB" | grep -E '^[0-9]+_.*\.py$' | sort -n)
only=${ONLY:-$(for i in "${!all[@]}"; do [ $(( i % PARTS + 1 )) -eq "$PART" ] && echo "${all[$i]%%_*}"; done | paste -sd,)}
echo "problems: $only"
case " ${ARGS:-} " in *" --graphs "*) suffix=_graphs;; *) suffix=;; esac
python3 bench/python/bench_kernelbench.py --kb "$KB" --dtype "$DTYPE" --only "$only" --tune --budget "${BUDGET:-40}" \
  --trials "${TRIALS:-100}" ${ARGS:-} --db "/tmp/kb_$DTYPE.db" 2>&1 | tee "$OUT/kernelbench_${DTYPE}_$(basename "$KB")_$PART$suffix.txt" | \
  sed -n '/^NVIDIA\|^problem/,$p'
