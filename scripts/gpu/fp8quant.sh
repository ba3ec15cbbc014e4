#!/bin/bash
# Usage: scripts/gpu/fp8quant.sh OUT [OLD_TREE]   (from the repository root on the GPU machine)
# The fp8 quantizer as FusedLinear fp8 runs it (docs/BENCHMARKS.md 2026-12-04 (q)): a build of
# what it needs, gpu_test_fp8 (FT_TEST_QUICK: the quantizer's paths and a typed plan),
# gpu_test_torch.py --fp8-only, a short fp8 tune of relu(x * sx * sw + bias) at the four seed
# shapes (budget $BUDGET s each, default 20), bench_fp8.py. With OLD_TREE (another checkout, e.g.
# main), its library is built alongside and bench_fp8's quantizer rows are timed with it on the
# same database: the before and after of one run. Logs under OUT.
set -o pipefail
OUT=$1 OLD=$2
export PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
cfg() {
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DSQLite3_INCLUDE_DIR="${SQLITE_INCLUDE:-$PWD/.device/include}" \
    -DSQLite3_LIBRARY=/usr/lib/x86_64-linux-gnu/libsqlite3.so.0
}
[ -n "$OLD" ] && { cfg "$OLD" /tmp/b0 && cmake --build /tmp/b0 --target fusedtune -j4; } > "$OUT/build_old.log" 2>&1 &
{ cfg . /tmp/b &&
  cmake --build /tmp/b -j12 --target fusedtune fusedtune_cli fusedtune_worker gpu_test_fp8 fusedtune_pyext; } \
  > "$OUT/build.log" 2>&1 || { grep -B2 -A6 error "$OUT/build.log" | head -40; exit 1; }
echo "built $(el)"
export FUSEDTUNE_LIBRARY=/tmp/b
FT_TEST_QUICK=1 timeout 90 /tmp/b/tests/gpu_test_fp8 > "$OUT/test_fp8.log" 2>&1
echo "gpu_test_fp8 rc=$? $(el)"; grep -E "FAIL|differ|ok" "$OUT/test_fp8.log" | head -20
timeout 90 python3 tests/python/gpu/gpu_test_torch.py --fp8-only > "$OUT/torch.log" 2>&1
echo "gpu_test_torch --fp8-only rc=$? $(el)"; tail -3 "$OUT/torch.log"
E='relu(x * sx * sw + bias) where row sx, col sw'
for S in 16x14336x4096 128x16384x16384 1024x8192x8192 4096x14336x4096; do
  timeout 60 /tmp/b/fusedtune --db /tmp/q.db tune --math fp8 --shape "$S" --epilogue "$E" --budget "${BUDGET:-20}" \
    --max-candidates 16 >> "$OUT/tune.log" 2>&1
  echo "tune $S rc=$? $(el)"
done
/tmp/b/fusedtune --db /tmp/q.db list > "$OUT/list.txt" 2>&1
timeout 150 python3 bench/python/bench_fp8.py --db /tmp/q.db --rounds 15 --calls 20 2>&1 | tee "$OUT/bench.txt"
echo "bench rc=$? $(el)"
if [ -n "$OLD" ]; then
  wait
  FUSEDTUNE_LIBRARY=/tmp/b0 timeout 90 python3 bench/python/bench_fp8.py --db /tmp/q.db --rounds 15 --calls 20 \
    --only eager_bf16,fused_fp8,layer_fp8,quant_x 2>&1 | tee "$OUT/bench_old.txt"
  echo "bench (OLD_TREE's library) rc=$? $(el)"
fi
