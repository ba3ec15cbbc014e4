#!/bin/bash
# Usage: [OUT=DIR] [STEPS=tests,split,main,kb,norms,kbbf16] [PART=1|2] [TESTS="gpu_test_api:120 ..."] scripts/gpu/unverified.sh
# What landed on main without a GPU run (round 4 sessions 3 and 4, docs/BENCHMARKS.md 2026-12-06
# (f) and (g)), in the order it matters, each step under its own time limit so that one command
# fits the device's 10 minutes (run the steps as separate calls otherwise):
#   tests   the GPU tests of the new or changed code: gpu_test_tc_presplit (3xtf32 pre-split: new,
#           never run), gpu_test_tc_pass (its enumeration mended after (g)), gpu_test_api,
#           gpu_test_reduce_tc (every tc kernel's text changed: the tc_norm dispatch, the
#           pre-split producer), gpu_test_fp8_gated (fp8 gated pairs and residuals: new, never
#           run); gpu_test_norm_tc passed in (g) (TESTS= to run it again);
#   split   issue 55's question, where 3xtf32's cycles go, and the pre-split form's time against
#           the in-kernel split and cuBLAS SGEMM (scripts/gpu/split_ceiling.sh: as it is, tf32
#           of the same tiles, then rebuilt with the in-kernel split cut; CUTS="" skips those);
#   main    the README's main job on a fresh database, cold then twice warm;
#   kb      KernelBench level 2 in bf16 where tc_norm may serve (37, 62, 75, 88, 94: groups of 64,
#           16, 16, 32, 32 columns) and in fp32 where tc_pass's chunk-4 GEMMs may (98, 55);
#   norms   issue 53's groupnorm set (16, 32, 64 and 512 features a group, and 32768 x 4096 x 1024)
#           tuned in bf16 and the layer timed against torch.mm alone and eager in CUDA graphs
#           (scripts/gpu/reduce_set.sh STEPS=tunes): does tc_norm reach 0.95x torch.mm?
#   kbbf16  KernelBench level 2 in bf16, part PART of two (PART=1, 2), no torch.compile.
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
  for t in ${TESTS:-gpu_test_tc_presplit:150 gpu_test_tc_pass:120 gpu_test_api:60 gpu_test_reduce_tc:150 gpu_test_fp8_gated:240}; do
    name=${t%%:*}; limit=${t##*:}
    FT_TEST_TMP=$OUT timeout "$limit" "./build/tests/$name" > "$OUT/$name.txt" 2>&1
    echo "$name rc=$? $(el): $(grep -iE 'assertion|checked|passed' "$OUT/$name.txt" | tail -1 | cut -c1-140)" | tee -a "$T"
    grep -E "FAIL|failed" "$OUT/$name.txt" | head -3 >> "$T"
  done;;
esac
case ,$STEPS, in *,split,*)
  OUT=$OUT/split timeout "${SPLIT_S:-400}" scripts/gpu/split_ceiling.sh > "$OUT/split.log" 2>&1
  echo "split ceiling rc=$? $(el)" | tee -a "$T"; cat "$OUT/split/split_table.txt" >> "$T";;
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
  OUT=$OUT/kb KB=.kb/level2 ONLY=37,62,75,88,94 DTYPE=bf16 BUDGET=20 TRIALS=50 ARGS=--no-compile timeout 240 \
    scripts/gpu/kernelbench.sh > "$OUT/kb2bf16.txt" 2>&1
  echo "kernelbench level 2 bf16 (tc_norm) rc=$? $(el)" | tee -a "$T"; sed -n '/^problem/,$p' "$OUT/kb2bf16.txt" >> "$T"
  OUT=$OUT/kb KB=.kb/level2 ONLY=98,55 BUDGET=30 TRIALS=50 ARGS=--no-compile timeout 200 scripts/gpu/kernelbench.sh \
    > "$OUT/kb2.txt" 2>&1
  echo "kernelbench level 2 fp32 (tc_pass chunks) rc=$? $(el)" | tee -a "$T"; sed -n '/^problem/,$p' "$OUT/kb2.txt" >> "$T";;
esac
case ,$STEPS, in *,norms,*)
  OUT=$OUT/norms STEPS=tunes ONLY=gn16,gn32,gn64,gn512,gn32k timeout 300 scripts/gpu/reduce_set.sh > /dev/null 2>&1
  echo "norms (tc_norm against torch.mm) rc=$? $(el)" | tee -a "$T"; tail -12 "$OUT/norms/bench_set.txt" >> "$T";;
esac
case ,$STEPS, in *,kbbf16,*)
  OUT=$OUT/kb KB=.kb/level2 DTYPE=bf16 PART=${PART:-1} PARTS=2 BUDGET=12 TRIALS=50 ARGS=--no-compile timeout 400 \
    scripts/gpu/kernelbench.sh > "$OUT/kbbf16.txt" 2>&1
  echo "kernelbench level 2 bf16 part ${PART:-1}/2 rc=$? $(el)" | tee -a "$T"; sed -n '/^problem/,$p' "$OUT/kbbf16.txt" >> "$T";;
esac
echo "total $(el)" | tee -a "$T"
echo; cat "$T"
