#!/bin/bash
# Gated pairs on the GPU machine, in one batch: gpu_test_gated, FusedLinear.from_gated in every
# mode (gpu_test_torch.py --gated-only), tunes of the SwiGLU halves (16x14336x4096,
# 4096x14336x4096, 'silu(x) * x2') in MATH (bf16, fp16, fp8: bf16 layers in e4m3, or default: fp32
# tensors, no --math) and their CUDA-graph benchmark. TESTS=0: the tunes and the benchmark only.
#   scripts/gpu/gated.sh BUILD OUT [BUDGET_S]   (MATOP_S=N: then gpu_test_matop for at most N s, a
#   sample of 3 variants per case: the shared sampling helper and the kernels' common prelude)
# BUILD: a build tree of this checkout; OUT: where logs and the database go.
set -u
B=$1 OUT=$2 BUDGET=${3:-25}
mkdir -p "$OUT"
DB=$OUT/gated.db
export FUSEDTUNE_LIBRARY=$B/libfusedtune.so PYTHONUNBUFFERED=1
t0=$(date +%s)
E='silu(x) * x2'
# fp8: the problem an FP8Linear pair looks up (each operand with its scales)
if [ "${MATH:-bf16}" = fp8 ]; then
  E=$(python3 -c "import sys; sys.path.insert(0, 'python'); from fusedtune.fp8 import fp8_epilogue; print(fp8_epilogue(sys.argv[1]))" "$E") ||
    { echo "gated.sh: fusedtune.fp8.fp8_epilogue failed (the package and $B's library must load)" >&2; exit 2; }
fi
if [ "${TESTS:-1}" != 0 ]; then
  (cd "$B" && ./tests/gpu_test_gated) > "$OUT/gpu_test_gated.log" 2>&1
  echo "gpu_test_gated rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "FAIL|gated pairs:" "$OUT/gpu_test_gated.log" | head -20
  timeout 90 python3 tests/python/gpu/gpu_test_torch.py --gated-only > "$OUT/gpu_test_torch_gated.log" 2>&1
  echo "gpu_test_torch --gated-only rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "FAIL|gated |passed" "$OUT/gpu_test_torch_gated.log" | head -20
fi
for shape in 16x14336x4096 4096x14336x4096; do
  # MATH=default: fp32 tensors as an fp32 model's are tuned (no --math: 3xtf32, then fp32)
  "$B/fusedtune" --db "$DB" tune --shape $shape --epilogue "$E" $([ "${MATH:-bf16}" = default ] || echo --math "${MATH:-bf16}") \
    --budget "$BUDGET" >> "$OUT/tune.log" 2>&1
  echo "tune $shape rc=$? ($(( $(date +%s) - t0 )) s)"
done
python3 bench/python/bench_gated.py --db "$DB" --math "${MATH:-bf16}" --rounds 15 > "$OUT/bench.log" 2>&1
echo "bench rc=$? ($(( $(date +%s) - t0 )) s)"
cat "$OUT/bench.log"
[ "${MATOP_S:-0}" = 0 ] && exit 0
(cd "$B" && FT_TEST_SAMPLE=3 timeout "$MATOP_S" ./tests/gpu_test_matop) > "$OUT/gpu_test_matop.log" 2>&1
echo "gpu_test_matop rc=$? (124: stopped at ${MATOP_S} s) ($(( $(date +%s) - t0 )) s)"; grep -E "FAIL|matrix operands" "$OUT/gpu_test_matop.log" | head
