#!/bin/bash
# Usage: OUT=DIR [TOOLS="memcheck racecheck synccheck"] [RUNS="NAME:LIMIT_S:ENV=V,ENV=V ..."] [BUDGET=390]
#        [SAN_ARGS="--kernel-name-exclude regex:nvjet"] [CS=compute-sanitizer] scripts/gpu/sanitize.sh
# compute-sanitizer (each tool with --error-exitcode 9) over the quick configurations of the GPU tests
# (build/tests/NAME), small enough to run sanitized: gpu_test_tc (quick, bf16, 129x264x40, PDL on),
# gpu_test_reduce_tc, gpu_test_norm_tc (FT_TEST_QUICK=1: a few small ragged problems, one variant per
# kernel form), gpu_test_fp8 (quick: the quantizer and the plans, PDL on), gpu_test_reduce and
# gpu_test_chain (quick: each form, each step kind once). Tool by tool (every test under memcheck,
# then racecheck, then synccheck; the tensor-core tests, with their mbarrier pipelines, first), each run
# under timeout: its LIMIT_S, cut to what is left of BUDGET seconds from the start (the build
# included); a run with under MIN_S (15) left is not started, its line says so. The whole script
# stays within about BUDGET + 10 seconds.
# rc per run: 0 clean and the test passed; 9 the sanitizer found errors; 1 the test's own check
# failed; 77 skipped (no GPU, or not sm_90 for the tensor-core tests); 124 or 137 timed out (no
# ERROR SUMMARY). racecheck may report hazards inside cuBLAS's own kernels (nvjet_..., seen at
# 333x520x2056: docs/BENCHMARKS.md 2026-12-01 (d)); the first findings under a run's line name the
# kernel; SAN_ARGS passes more options (a kernel filter, --print-limit).
# Logs: $OUT/NAME.TOOL.txt, $OUT/build.log; the table ($OUT/table.txt) printed last.
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:?OUT=DIR}; mkdir -p "$OUT"
T=$OUT/table.txt; : > "$T"; t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
CS=${CS:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
BUDGET=${BUDGET:-390}; MIN_S=${MIN_S:-15}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$T"
"$CS" --version 2>&1 | grep -iE "version" | tail -1 | tee -a "$T"
. scripts/gpu/build.sh "$OUT/build.log"; echo "build $(el)" | tee -a "$T"
Q=FT_TEST_QUICK=1
RUNS=${RUNS:-"gpu_test_tc:100:$Q,FT_TEST_MODE=bf16,FT_TEST_SHAPE=129x264x40,FUSEDTUNE_PDL=1 gpu_test_reduce_tc:70:$Q
  gpu_test_norm_tc:70:$Q gpu_test_fp8:70:$Q,FUSEDTUNE_PDL=1 gpu_test_reduce:70:$Q gpu_test_chain:60:$Q"}
for tool in ${TOOLS:-memcheck racecheck synccheck}; do
  for r in $RUNS; do
    IFS=: read -r name cap envs <<< "$r"
    left=$(( BUDGET - ($(date +%s) - t0) - 10 )) # 10: timeout's grace before KILL
    lim=$(( cap < left ? cap : left ))
    if [ "$lim" -lt "$MIN_S" ]; then
      printf "%-20s %-9s not run: %ss of the budget left\n" "$name" "$tool" "$(( left + 10 ))" | tee -a "$T"; continue
    fi
    log=$OUT/$name.$tool.txt; s0=$(date +%s.%N)
    # shellcheck disable=SC2086  # envs and SAN_ARGS are lists
    FT_TEST_TMP=$OUT timeout -k 10 "$lim" env ${envs//,/ } "$CS" --tool "$tool" --error-exitcode 9 ${SAN_ARGS:-} \
      "./build/tests/$name" > "$log" 2>&1
    rc=$?
    sum=$(grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | sed 's/^=* *//' | paste -sd';' | sed 's/;/; /g' | cut -c1-120)
    [ -n "$sum" ] || sum="no ERROR SUMMARY (limit ${lim}s)"
    ran=$(grep -E "checked|correct|assertion|: ok$|^SKIP" "$log" | grep -v "^=" | tail -2 | cut -c1-60 | paste -sd' ')
    printf "%-20s %-9s rc=%-3s %6ss  %s%s\n" "$name" "$tool" "$rc" \
      "$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $s0}")" "$sum" "${ran:+  [$ran]}" | tee -a "$T"
    if [ "$rc" != 0 ]; then # the first findings (kernel and access), the test's own failures
      grep -E "^=+ +(Invalid|Error|Warning|Race|Barrier|Program hit|Uninitialized|Misaligned|Out-of-range|    at )" "$log" |
        head -6 | cut -c1-160 | sed 's/^/    /' >> "$T"
      grep -E "\.c:[0-9]+: " "$log" | grep -v "^=" | head -3 | cut -c1-160 | sed 's/^/    /' >> "$T"
    fi
  done
done
echo "total $(el)" | tee -a "$T"
echo; cat "$T"
