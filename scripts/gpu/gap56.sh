#!/bin/bash
# Usage: OUT=DIR [FP8="4096x7168x16384 16x14336x4096"] [BF16="1024x8192x8192"] [HEAVY='mish(mish(x + bias))']
#        [TB=30] [NCU=1] [NCU_FP8="4096x7168x16384"] [BENCH=1] scripts/gpu/gap56.sh
# Issue 56 item 1, where the cycles go, before any change: per fp8 shape a default tune (fp8,
# relu(x·sx·sw + bias), budget TB) and per bf16 shape one of the heavy epilogue HEAVY, then
# bench_fp8.py (CUDA graphs: the stored fp8 plan against torch._scaled_mm per tensor and row-wise)
# (twice: the fused kernel's programmatic dependent launch off, then on: FUSEDTUNE_PDL=1) and,
# with NCU=1, ncu (--clock-control none) over `fusedtune bench` of each: every distinct
# kernel's third launch (ours: ft_gemm_tc, the passes; cuBLAS(Lt)'s nvjet / sm90 / cutlass),
# first the SpeedOfLight, Occupancy, LaunchStats, ComputeWorkloadAnalysis, MemoryWorkloadAnalysis
# and WarpStateStats sections, then the tensor pipes' utilization and the stall reasons per
# issued instruction as raw metrics. Logs under $OUT; the table printed last.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:?OUT=DIR}; mkdir -p "$OUT"; T=$OUT/table.txt; : > "$T"
t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$T"
. scripts/gpu/build.sh "$OUT/build.log"; echo "build $(el)" | tee -a "$T"
DB=/tmp/gap56.db; rm -f "$DB"*
export FUSEDTUNE_GRAPH_TIMING=${FUSEDTUNE_GRAPH_TIMING:-1} # the decode shape tuned as graphs (the default)
E8='relu(x * sx * sw + bias) where row sx, col sw'
HEAVY=${HEAVY:-mish(mish(x + bias))}
KRX='ft_gemm|ft_ep|ft_reduce|ft_gated|ft_quant|nvjet|sm90|cutlass|gemm'
prof() { # tag shape epilogue math
  [ "${NCU:-1}" = 1 ] || return 0
  timeout 200 ncu --clock-control none --kernel-id ::regex:"$KRX":3 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats \
    ./build/fusedtune --db "$DB" bench --shape "$2" --epilogue "$3" --math "$4" --repeats 20 > "$OUT/ncu_$1.txt" 2>&1
  echo "ncu sections $1 rc=$? $(el)" | tee -a "$T"
  grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Warp Cycles Per Issued|Block Size|Grid Size|Shared Memory Configuration Size" \
    "$OUT/ncu_$1.txt" | head -80 >> "$T"
  timeout 150 ncu --clock-control none --kernel-id ::regex:"$KRX":3 \
    --metrics gpu__time_duration.sum,regex:sm__pipe_tensor.*cycles_active.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio \
    ./build/fusedtune --db "$DB" bench --shape "$2" --epilogue "$3" --math "$4" --repeats 20 > "$OUT/ncu_metrics_$1.txt" 2>&1
  echo "ncu metrics $1 rc=$? $(el)" | tee -a "$T"
  # kernel names, duration, tensor pipes, and stall reasons above 0.3 warps per issue
  awk '/^  [a-zA-Z_0-9]+.*\(/ {print substr($0,1,110)} /gpu__time_duration|pipe_tensor/ {print} /issue_stalled/ && $NF+0 > 0.3 {print}' \
    "$OUT/ncu_metrics_$1.txt" | head -80 >> "$T"
}
for S in ${FP8-4096x7168x16384 16x14336x4096}; do
  timeout $(( ${TB:-30} + 90 )) ./build/fusedtune --db "$DB" tune --math fp8 --shape "$S" --epilogue "$E8" --budget "${TB:-30}" \
    > "$OUT/tune_fp8_$S.txt" 2>&1
  echo "tune fp8 $S rc=$? $(el): $(grep -A1 '^served' "$OUT/tune_fp8_$S.txt" | tail -1 | cut -c1-150)" | tee -a "$T"
done
for S in ${BF16-1024x8192x8192}; do
  timeout $(( ${TB:-30} + 90 )) ./build/fusedtune --db "$DB" tune --math bf16 --shape "$S" --epilogue "$HEAVY" --budget "${TB:-30}" \
    > "$OUT/tune_bf16_$S.txt" 2>&1
  echo "tune bf16 $S '$HEAVY' rc=$? $(el): $(grep -A1 '^served' "$OUT/tune_bf16_$S.txt" | tail -1 | cut -c1-150)" | tee -a "$T"
done
if [ "${BENCH:-1}" = 1 ] && [ -n "${FP8-x}" ]; then
  SH=$(echo ${FP8-4096x7168x16384 16x14336x4096} | tr ' ' ',')
  # the fused kernel's programmatic dependent launch off (FUSEDTUNE_PDL=0), then on (FUSEDTUNE_PDL=1)
  for pdl in off on; do
    [ $pdl = on ] && export FUSEDTUNE_PDL=1 || export FUSEDTUNE_PDL=0
    timeout 150 python3 bench/python/bench_fp8.py --db "$DB" --rounds 10 --calls 20 --shapes "$SH" \
      --only mm_bf16,eager_bf16,scaled_mm,scaled_row,fused_fp8,layer_fp8,quant_x > "$OUT/bench_fp8_pdl_$pdl.txt" 2>&1
    echo "bench_fp8 pdl $pdl rc=$? $(el)" | tee -a "$T"; tail -25 "$OUT/bench_fp8_pdl_$pdl.txt" >> "$T"
  done
fi
for S in ${NCU_FP8-4096x7168x16384}; do prof "fp8_$S" "$S" "$E8" fp8; done
for S in ${BF16-1024x8192x8192}; do prof "bf16_$S" "$S" "$HEAVY" bf16; done
echo "total $(el)" | tee -a "$T"
echo; cat "$T"
