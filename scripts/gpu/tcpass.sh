#!/bin/bash
# Usage: [OUT=DIR] [STEPS=build,test,tunes] [BUDGET=SECONDS] [ONLY=sm,bn,gn,...] [MAIN=1] scripts/gpu/tcpass.sh
# (all steps take about 8 minutes on an H100; within a 10-minute limit per command, run
# STEPS=build,test then STEPS=tunes on the same machine, whose build stays)
# Family tc_pass on the GPU (src/family/tc/family_tc_pass.c: in 3xtf32 the reduction pass after
# fusedtune's own tensor-core GEMM instead of cuBLAS SGEMM): build; gpu_test_tc_pass (every variant
# kind against float64 on ragged shapes, NaN-poisoned); then a 3xtf32 tune of each problem below,
# printing which plan won, its time against eager and cuBLAS SGEMM, and the best tc_pass plan beside
# the best cuBLAS SGEMM + pass plan (the speed-up this family brings); MAIN=1 also times the README's
# main job (an elementwise problem, which tc_pass must leave alone). A short table last.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-logs/tcpass}; mkdir -p "$OUT"
BUDGET=${BUDGET:-100}; STEPS=${STEPS:-build,test,tunes}
step() { case ,$STEPS, in *,$1,*) return 0;; esac; return 1; }
T=$OUT/table.txt; : > "$T"; t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee -a "$T"
git log --oneline -1 | tee -a "$T"
if step build; then
  . scripts/gpu/build.sh "$OUT/build.log"
  echo "build $(el)" | tee -a "$T"
fi
[ -x ./build/fusedtune ] || { echo "no build: run with STEPS=build first" | tee -a "$T"; exit 1; }

if step test; then
  timeout 420 ./build/tests/gpu_test_tc_pass > "$OUT/gpu_test_tc_pass.txt" 2>&1
  echo "gpu_test_tc_pass rc=$? $(el): $(grep -E 'variants checked' "$OUT/gpu_test_tc_pass.txt" | tail -1)" | tee -a "$T"
  grep -iE "fail|assert" "$OUT/gpu_test_tc_pass.txt" | head -8 | tee -a "$T"
fi

export FUSEDTUNE_DB=$OUT/tcpass.db
# name|shape|epilogue: the KernelBench layers whose epilogue normalizes (issue: 0.98-1.07x eager
# through cuBLAS SGEMM).
PROBLEMS=(
  "sm|1024x8192x8192|softmax(gelu(x + bias))"
  "bn|16384x4096x4096|batchnorm(x * 2 + bias)"
  "gn|1024x8192x8192|groupnorm(x + bias, 256)"
  "bnr|1024x8192x8192|relu(gelu(batchnorm(x + bias)))"
  "sm16k|16384x4096x4096|softmax(gelu(x))"
)
ONLY=${ONLY:-sm,bn,gn}; step tunes || ONLY=none
ROWS=()
# The row of the first (fastest by "vs GEMM", as tune sorts them) correct candidate whose variant
# starts with $2; the median of the first correct row of strategy $2 (a baseline's description may
# hold blanks: the median follows "ok").
first_row() { awk -v p="$2" '$2 ~ "^"p && $3 == "ok" {print; exit}' "$1"; }
median_of() { awk -v s="$2" '$1 == s {for (i = 2; i < NF; i++) if ($i == "ok") {print $(i + 1); exit}}' "$1"; }
for p in "${PROBLEMS[@]}"; do
  IFS='|' read -r name shape ep <<< "$p"
  case ,$ONLY, in *,$name,*) ;; *) continue;; esac
  f=$OUT/tune_$name.txt
  ./build/fusedtune tune --math 3xtf32 --shape "$shape" --epilogue "$ep" --budget "$BUDGET" > "$f" 2>&1
  rc=$?
  best=$(grep -E '^best:' "$f" | head -1)
  echo "tune $name $shape '$ep' rc=$rc $(el)" | tee -a "$T"
  echo "  $best" | tee -a "$T"
  # columns: strategy variant status median_ms TFLOP/s rel_err vs_eager vs_GEMM
  eager=$(median_of "$f" eager); gemm=$(median_of "$f" cublas_gemm)
  tcp=$(first_row "$f" tcp_); red=$(first_row "$f" red_)
  echo "  best tc_pass:          ${tcp:-none}" | tee -a "$T"
  echo "  best cuBLAS SGEMM+pass: ${red:-none}" | tee -a "$T"
  tcp_ms=$(echo "$tcp" | awk '{print $4}'); red_ms=$(echo "$red" | awk '{print $4}')
  best_ms=$(echo "$best" | awk '{print $4}'); best_name=$(echo "$best" | awk '{print $3}')
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a > 0 && b > 0) printf "%.3fx", a / b; else print "-" }'; }
  ROWS+=("$(printf '%-6s %-17s %-38.38s %-50.50s %9s %8s %8s %9s %9s %8s' "$name" "$shape" "$ep" "$best_name" \
    "${best_ms:--}" "$(ratio "$eager" "$best_ms")" "$(ratio "$gemm" "$best_ms")" "${tcp_ms:--}" "${red_ms:--}" \
    "$(ratio "$red_ms" "$tcp_ms")")")
done

if [ "${MAIN:-0}" = 1 ]; then
  now() { date +%s.%N; }
  s0=$(now); ./build/fusedtune tune --shape 128x16384x16384 --epilogue minsub > "$OUT/main.txt" 2>&1
  echo "main job (minsub) rc=$? $(awk "BEGIN{print $(now) - $s0}") s: $(grep -E '^best:' "$OUT/main.txt")" | tee -a "$T"
fi
echo "total $(el)" | tee -a "$T"

echo; cat "$T"
echo
printf '%-6s %-17s %-38s %-50s %9s %8s %8s %9s %9s %8s\n' name shape epilogue "winning plan" best_ms "vs eager" \
  "vs SGEMM" tcp_ms red_ms "tcp gain"
for r in "${ROWS[@]}"; do echo "$r"; done
