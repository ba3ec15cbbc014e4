#!/bin/bash
# Usage (on the GPU machine, sourced or run from the project root): scripts/gpu/build_tools.sh BUILD_DIR [OUT_BIN]
# Builds scripts/gpu/tc_variants.c against BUILD_DIR's libfusedtune (cuBLAS beside it).
b=${1:-build}
gcc -O2 -std=gnu17 -Iinclude -I/usr/local/cuda/include scripts/gpu/tc_variants.c -L"$b" -lfusedtune \
  -Wl,-rpath,"$(realpath "$b")" -L/usr/local/cuda/lib64 -lcublas -lcudart -o "${2:-$b/tc_variants}"
