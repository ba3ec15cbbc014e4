#!/bin/bash
# Usage (on the GPU machine, from the project root, with a built tree): OUT=DIR [BUILD=build]
#   [STEPS=all|passes,tunes,tests] scripts/gpu/reduce_set.sh
# Issue 53's measurements in one go, logs under OUT: the reduction passes alone against torch's
# kernels and a device copy (scripts/gpu/bench_reduce.sh), then a default bf16 tune of each
# normalization and softmax problem of bench/python/bench_graphs.py's NORMS list and the layer
# against torch.mm and eager (scripts/gpu/bench_set.sh), then the GPU reduction tests.
set -u
OUT=$(realpath -m -- "${OUT:?OUT=DIR}"); BUILD=$(realpath -m -- "${BUILD:-build}"); STEPS=${STEPS:-passes,tunes,tests}
mkdir -p "$OUT"; cd "$(dirname "$0")/../.." || exit 2
export LD_LIBRARY_PATH=$BUILD:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$OUT/gpu.txt" 2>&1
t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
case ,$STEPS, in *,passes,*)
  scripts/gpu/bench_reduce.sh "$BUILD" ${PASS_ARGS:-} > "$OUT/bench_reduce.txt" 2>&1; echo "passes rc=$? $(el)" >> "$OUT/steps.txt";; esac
case ,$STEPS, in *,tunes,*)
  OUT=$OUT/set BUILD=$BUILD ONLY=${ONLY:-gn16,gn32,gn64,gn512,gn32k,bn16k,sm128,sm1k,smgelu} \
    scripts/gpu/bench_set.sh "$OUT/tune.db" bf16 > "$OUT/bench_set.txt" 2>&1; echo "tunes rc=$? $(el)" >> "$OUT/steps.txt";; esac
case ,$STEPS, in *,tests,*)
  FT_TEST_TMP=$OUT "$BUILD/tests/gpu_test_reduce" > "$OUT/gpu_test_reduce.txt" 2>&1; echo "gpu_test_reduce rc=$? $(el)" >> "$OUT/steps.txt";; esac
cat "$OUT/gpu.txt" "$OUT/steps.txt"
