#!/bin/bash
# Issue 56 in one batch on the GPU machine, from the repository root:
#   scripts/gpu/fp8_out.sh OUT [GATED_BUDGET_S]
# The Release build; gpu_test_fp8 (FT_TEST_QUICK=1: the quantizer, typed plans, the e4m3 output)
# and gpu_test_torch.py --fp8-only; the two-layer fp8 chain (bench/python/bench_fp8_chain.py: y
# handed over in bf16 or e4m3) after tunes of its four problems (--budget CHAIN_BUDGET, default
# 15 s); the heavy epilogue on two input sets (scripts/gpu/heavy_data.py) after a default tune
# (--budget 8; HEAVY=0 leaves it out; CHAIN=0 stops after the tests); with GATED_BUDGET_S, the fp8 SwiGLU halves at that budget (gated.sh, TESTS=0).
# Logs under OUT; the tables printed last.
set -u
OUT=$1 GATED=${2:-0}
mkdir -p "$OUT"
t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
. scripts/gpu/build.sh "$OUT/build.log"; echo "build $(el)"
export FUSEDTUNE_LIBRARY=$PWD/build PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(cd build && FT_TEST_QUICK=1 timeout 180 ./tests/gpu_test_fp8) > "$OUT/gpu_test_fp8.log" 2>&1
echo "gpu_test_fp8 (quick) rc=$? $(el)"; grep -E "e4m3 y|FAIL|gpu_test_fp8: ok" "$OUT/gpu_test_fp8.log" | head -12
timeout 240 python3 tests/python/gpu/gpu_test_torch.py --fp8-only > "$OUT/torch_fp8.log" 2>&1
echo "gpu_test_torch --fp8-only rc=$? $(el)"; grep -E "fp8|FAIL|passed" "$OUT/torch_fp8.log" | head -12
if [ "${CHAIN:-1}" = 0 ]; then  # the tests alone
  (cd "$OUT" && tar czf /tmp/fp8_out_logs.tgz --exclude='*.db' . && find . -mindepth 1 -delete && mv /tmp/fp8_out_logs.tgz .)
  exit 0
fi
DB=$OUT/chain.db
python3 bench/python/bench_fp8_chain.py --db "$DB" --print-problems > "$OUT/chain.tsv"
while IFS=$'\t' read -r shape e; do
  timeout 90 build/fusedtune --db "$DB" tune --shape "$shape" --epilogue "$e" --math fp8 --quiet \
    --budget "${CHAIN_BUDGET:-15}" >> "$OUT/chain_tune.log" 2>&1 < /dev/null
  echo "tune fp8 $shape rc=$? $(el)"
done < "$OUT/chain.tsv"
timeout 180 python3 bench/python/bench_fp8_chain.py --db "$DB" > "$OUT/chain.txt" 2>&1; echo "chain rc=$? $(el)"
if [ "${HEAVY:-1}" != 0 ]; then
HDB=$OUT/heavy.db
timeout 60 build/fusedtune --db "$HDB" tune --shape 1024x8192x8192 --epilogue 'gelu_tanh(x + bias) * 1.5' --math bf16 \
  --quiet --budget 8 > "$OUT/heavy_tune.log" 2>&1; echo "tune gelutanh rc=$? $(el)"
timeout 120 python3 scripts/gpu/heavy_data.py --db "$HDB" > "$OUT/heavy.txt" 2>&1; echo "heavy rc=$? $(el)"
# the library's own timing of the same plan beside its cuBLAS GEMM (tc_variants' 0.990x was of that GEMM)
timeout 60 build/fusedtune --db "$HDB" bench --shape 1024x8192x8192 --epilogue 'gelu_tanh(x + bias) * 1.5' --math bf16 \
  --repeats 200 >> "$OUT/heavy.txt" 2>&1; echo "bench gelutanh rc=$? $(el)"
fi
if [ "$GATED" != 0 ]; then
  MATH=fp8 TESTS=0 timeout $((3 * GATED + 60)) scripts/gpu/gated.sh build "$OUT/gated" "$GATED" > "$OUT/gated.txt" 2>&1
  echo "gated fp8 budget $GATED rc=$? $(el)"
fi
echo "== chain"; cat "$OUT/chain.txt"; [ "${HEAVY:-1}" != 0 ] && { echo "== heavy"; cat "$OUT/heavy.txt"; }
[ "$GATED" != 0 ] && { echo "== gated"; tail -8 "$OUT/gated.txt"; }
# What comes back from the device machine: the logs in one archive (its file count is limited).
(cd "$OUT" && tar czf /tmp/fp8_out_logs.tgz --exclude='*.db' . && find . -mindepth 1 -delete && mv /tmp/fp8_out_logs.tgz .)
exit 0
