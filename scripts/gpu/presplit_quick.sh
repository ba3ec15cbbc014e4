#!/bin/bash
# Usage: OUT=DIR scripts/gpu/presplit_quick.sh   (the shortest GPU check of the pre-split 3xtf32 form)
# gpu_test_tc_presplit, then the pre-split form (cluster 2 and 1) against the in-kernel split of
# the same tile and cuBLAS SGEMM (scripts/gpu/tc_variants.c, E = x) at two of issue 55's shapes.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:?OUT=DIR}; mkdir -p "$OUT"
. scripts/gpu/build.sh "$OUT/build.log"; bash scripts/gpu/build_tools.sh build
nvidia-smi --query-gpu=name --format=csv,noheader
FT_TEST_TMP=$OUT timeout "${TEST_S:-100}" ./build/tests/gpu_test_tc_presplit > "$OUT/presplit_test.txt" 2>&1
echo "gpu_test_tc_presplit rc=$?"; grep -v "^ok" "$OUT/presplit_test.txt" | tail -8
C1='{"kind":"gemm","bn":128,"bk":32,"stages":4,"consumers":2,"cluster":2,"swizzle":8,"grid":132,"layout":4,"math":4,"chunk":16}'
P1='{"kind":"gemm","bn":128,"bk":32,"stages":3,"consumers":2,"cluster":2,"swizzle":8,"grid":132,"layout":4,"math":4,"chunk":16,"presplit":1}'
P3='{"kind":"gemm","bn":128,"bk":32,"stages":3,"consumers":2,"cluster":1,"swizzle":8,"grid":132,"layout":4,"math":4,"chunk":16,"presplit":1}'
for s in ${SHAPES:-1024x8192x8192 128x16384x16384}; do
  timeout 45 ./build/tc_variants "$s" x 3xtf32 "$C1" "$P1" "$P3" 2>&1 | grep -v "E = x" | tee -a "$OUT/presplit_time.txt"
done
