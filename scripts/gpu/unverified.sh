#!/bin/bash
# Usage: [OUT=DIR] [STEPS=tests,main,kb,kbbf16] [TESTS="gpu_test_api:120 ..."] scripts/gpu/unverified.sh
# What landed on main without a GPU run (round 4 session 2, docs/BENCHMARKS.md 2026-12-06 (e)),
# in the order it matters, each step under its own time limit so that one command fits the
# device's 10 minutes (run the steps as separate calls otherwise):
#   tests   the GPU tests of the new or changed code: gpu_test_tc_pass (judged by the tuner's
#           tolerance and by its parts), gpu_test_reduce (the held forms, the ±inf rule, the reused
#           reduction, a matrix with a reduction, softmax of batchnorm), gpu_test_reduce_tc (the
#           reused logsumexp; 3xtf32), gpu_test_api (launch.c's switch on what runs before a pass);
#   kb      KernelBench level 2 again where the tree changed what serves it or the check was
#           incomplete (14 and 18 with the float64 column; 22, 28, 80, 84 now captured whole; 55
#           and 98 now tc_pass's), and level 3's 44, all fp32 / bf16 as the acceptance says;
#   main    the README's main job on a fresh database, cold then twice warm (a repeat finds its
#           results before a worker starts: issue 55's warm <= 2 s);
#   kbbf16  KernelBench level 2 in bf16, the first part of four (PART=1..4 for the rest).
# Needs .kb/level2 and .kb/level3 (KernelBench's files, carried) and .device/include (sqlite3.h).
# Logs under $OUT; a table last.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-logs}; mkdir -p "$OUT"; STEPS=${STEPS:-tests,kb}
T=$OUT/table.txt; : > "$T"; t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$T"
. scripts/gpu/build.sh "$OUT/build.log"
echo "build $(el)" | tee -a "$T"
case ,$STEPS, in *,tests,*)
  for t in ${TESTS:-gpu_test_tc_pass:200 gpu_test_reduce:240 gpu_test_reduce_tc:120 gpu_test_api:120}; do
    name=${t%%:*}; limit=${t##*:}
    FT_TEST_TMP=$OUT timeout "$limit" "./build/tests/$name" > "$OUT/$name.txt" 2>&1
    echo "$name rc=$? $(el): $(grep -iE 'assertion|checked|passed' "$OUT/$name.txt" | tail -1 | cut -c1-140)" | tee -a "$T"
    grep -E "FAIL|failed" "$OUT/$name.txt" | head -3 >> "$T"
  done;;
esac
case ,$STEPS, in *,main,*)
  rm -f /tmp/main_job.db
  for run in cold warm warm; do
    s0=$(date +%s.%N)
    ./build/fusedtune --db /tmp/main_job.db tune --shape 128x16384x16384 --epilogue minsub > "$OUT/main_$run.txt" 2>&1
    rc=$?; s1=$(date +%s.%N)
    echo "main job $run rc=$rc $(awk "BEGIN{printf \"%.2f\", $s1 - $s0}") s: $(grep -iE 'nothing to do|served' "$OUT/main_$run.txt" | head -1 | cut -c1-100)" | tee -a "$T"
  done
  grep -A3 "^served" "$OUT/main_cold.txt" | head -4 >> "$T";;
esac
case ,$STEPS, in *,kb,*)
  OUT=$OUT/kb KB=.kb/level2 ONLY=14,18,22,28,55,80,84,98 BUDGET=30 timeout 300 scripts/gpu/kernelbench.sh > "$OUT/kb2.txt" 2>&1
  echo "kernelbench level 2 rc=$? $(el)" | tee -a "$T"; sed -n '/^problem/,$p' "$OUT/kb2.txt" >> "$T"
  OUT=$OUT/kb KB=.kb/level3 ONLY=44 DTYPE=bf16 BUDGET=30 TRIALS=50 timeout 120 scripts/gpu/kernelbench.sh > "$OUT/kb3.txt" 2>&1
  echo "kernelbench level 3 (44) rc=$? $(el)" | tee -a "$T"; sed -n '/^problem/,$p' "$OUT/kb3.txt" >> "$T";;
esac
case ,$STEPS, in *,kbbf16,*)
  OUT=$OUT/kb KB=.kb/level2 DTYPE=bf16 PART=${PART:-1} PARTS=4 BUDGET=20 timeout 420 scripts/gpu/kernelbench.sh > "$OUT/kbbf16.txt" 2>&1
  echo "kernelbench level 2 bf16 part ${PART:-1}/4 rc=$? $(el)" | tee -a "$T"; sed -n '/^problem/,$p' "$OUT/kbbf16.txt" >> "$T";;
esac
echo "total $(el)" | tee -a "$T"
echo; cat "$T"
