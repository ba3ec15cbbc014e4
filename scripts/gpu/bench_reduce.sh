#!/bin/bash
# Usage (on the GPU machine, from the project root, after the build): scripts/gpu/bench_reduce.sh BUILD_DIR [ARGS...]
# Builds scripts/gpu/reduce_passes.c into BUILD_DIR/libreduce_passes.so (the library's internal
# archive linked in whole) and runs bench/python/bench_reduce.py ARGS with it: the reduction pass
# alone against torch's kernel for the same step, and a device copy, in one process.
b=${1:-build}; shift
# the source folders the library builds with (CMakeLists.txt FUSEDTUNE_SRC_DIRS)
srcinc=$(for d in src/*/ src/*/*/; do printf -- "-I%s " "${d%/}"; done)
gcc -O2 -std=gnu17 -shared -fPIC -Iinclude $srcinc -I/usr/local/cuda/include scripts/gpu/reduce_passes.c \
  -Wl,--whole-archive "$b/libfusedtune_internal.a" -Wl,--no-whole-archive -L/usr/local/cuda/lib64 \
  -lcublasLt -lcublas -lnvrtc -lcudart /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 -lm -lpthread -ldl \
  -o "$b/libreduce_passes.so" || exit 2
FT_REDUCE_PASSES="$b/libreduce_passes.so" python3 bench/python/bench_reduce.py "$@"
