#!/bin/bash
# Usage: OUT=DIR [SHAPES="1024x8192x8192 128x16384x16384"] scripts/gpu/split_ceiling.sh
# Issue 55 item 2, where 3xtf32's cycles go: the same 3xtf32 tc variants timed (E = x, against
# cuBLAS SGEMM, scripts/gpu/tc_variants.c) with the kernel as it is (and the pre-split form, x
# split each call, W once), then rebuilt with the in-kernel
# split of W's tile left out (what a pre-split W would save), then of both tiles (the bound of the
# three products alone), then tf32 (one product) of the same tiles. The modified builds give wrong
# numbers (timing only) and are made in a copy of the tree under $OUT; the checkout is untouched.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:?OUT=DIR}; mkdir -p "$OUT"; T=$OUT/split_table.txt; : > "$T"
SHAPES=${SHAPES:-1024x8192x8192 128x16384x16384}
C1='{"kind":"gemm","bn":128,"bk":32,"stages":4,"consumers":2,"cluster":2,"swizzle":8,"grid":132,"layout":4,"math":4,"chunk":16}'
C2='{"kind":"gemm","bn":128,"bk":32,"stages":3,"consumers":2,"cluster":2,"swizzle":8,"grid":132,"layout":4,"math":4,"chunk":8,"tstore":1}'
C3='{"kind":"gemm","bn":64,"bk":32,"stages":5,"consumers":2,"cluster":2,"swizzle":8,"grid":132,"layout":4,"math":4,"chunk":16,"aregs":1,"tstore":1}'
P1='{"kind":"gemm","bn":128,"bk":32,"stages":3,"consumers":2,"cluster":2,"swizzle":8,"grid":132,"layout":4,"math":4,"chunk":16,"presplit":1}'
P2='{"kind":"gemm","bn":128,"bk":32,"stages":3,"consumers":2,"cluster":2,"swizzle":8,"grid":132,"layout":4,"math":4,"chunk":8,"presplit":1,"tstore":1}'
P3='{"kind":"gemm","bn":128,"bk":32,"stages":3,"consumers":2,"cluster":1,"swizzle":8,"grid":132,"layout":4,"math":4,"chunk":16,"presplit":1}'
T1='{"kind":"gemm","bn":128,"bk":32,"stages":4,"consumers":2,"cluster":2,"swizzle":8,"grid":132,"layout":4,"math":1}'
T2='{"kind":"gemm","bn":128,"bk":32,"stages":5,"consumers":2,"cluster":2,"swizzle":8,"grid":132,"layout":4,"math":1,"tstore":1}'
run_set() { # label build_dir math configs...
  local label=$1 b=$2 math=$3; shift 3
  for s in $SHAPES; do
    echo "== $label $s" >> "$T"
    timeout 120 "$b/tc_variants" "$s" x "$math" "$@" > "$OUT/split_${label}_$s.txt" 2>&1
    grep -v "E = x" "$OUT/split_${label}_$s.txt" | tail -5 >> "$T"
  done
}
SRC=$PWD
. scripts/gpu/build.sh "$OUT/build.log"; bash scripts/gpu/build_tools.sh build
run_set as_is build 3xtf32 "$C1" "$C2" "$C3" "$P1" "$P2" "$P3"
run_set tf32 build tf32 "$T1" "$T2"
for cut in ${CUTS-w both}; do
  rm -rf "$OUT/tree_$cut"; mkdir -p "$OUT/tree_$cut"
  tar --exclude=./build --exclude=./.git -cf - . | tar -C "$OUT/tree_$cut" -xf -
  f=$OUT/tree_$cut/kernels_src/tc_mainloop.cuh
  # the split of W's stage (and, for "both", of x's) becomes nothing
  sed -i 's|^    ft_split(rs.sB + ring.stage \* C::kB, sm + C::kA, C::kB / 16, (int)threadIdx.x, 128 \* C::consumers);|    /* cut */|' "$f"
  sed -i 's|^    ft_split(rs.sB + ring.stage \* C::kB, sm, C::kB / 16, (int)threadIdx.x, 128 \* C::consumers);|    /* cut */|' "$f"
  [ $cut = both ] && sed -i 's|^    ft_split(rs.sA + ring.stage \* C::kA, sm, C::kA / 16, (int)threadIdx.x, 128 \* C::consumers);|    /* cut */|' "$f"
  echo "$cut: $(grep -c '/\* cut \*/' "$f") splits cut" >> "$T"
  (cd "$OUT/tree_$cut" && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSQLite3_INCLUDE_DIR="$SRC/.device/include" \
     -DSQLite3_LIBRARY=/usr/lib/x86_64-linux-gnu/libsqlite3.so.0 > "$OUT/build_$cut.log" 2>&1 &&
   cmake --build build -j16 --target fusedtune >> "$OUT/build_$cut.log" 2>&1 && bash scripts/gpu/build_tools.sh build) ||
    { echo "build of $cut failed" >> "$T"; tail -20 "$OUT/build_$cut.log" >> "$T"; continue; }
  run_set "cut_$cut" "$OUT/tree_$cut/build" 3xtf32 "$C1" "$C2" "$C3"
done
cat "$T"
