#!/bin/bash
# Usage: OUT=DIR [STEPS=main,set,api,kb1,kb2,tests,chain] [SET=...] [KB_S=300] [TESTS="gpu_test_x:120 gpu_test_y:60:q gpu_test_z:90:FUSEDTUNE_PDL=1,FT_TEST_MODE=bf16 ..." (q: FT_TEST_QUICK=1)] scripts/gpu/session6.sh
# Round 4 session 6's checks (docs/BENCHMARKS.md 2026-12-06 (i)), each step under its own limit,
# most important first:
#   main   the README main job on a fresh database, cold then warm (the warm repeat after 17f8711
#          does nothing: no compilation, no worker);
#   set    bench_set.sh in the `default` mode (fp32 tensors, no --math: fp32 accuracy) on issue
#          55's elementwise problems and GEMM shapes, FusedLinear vs torch.mm (SGEMM) and eager;
#   api    gpu_test_api (the fp32 default served at SGEMM's error);
#   host   the C++ operator: its GPU tests (ctest python_gpu_torch*, python_torch_native*), then
#          bench/python/bench_host.py --tune (host us per call against F.linear, per plan kind);
#   kb     KernelBench level 2 fp32, the 37 in one part (KB_S seconds), no torch.compile (KB_ARGS:
#          kernelbench.sh's ARGS, default --no-compile; ONLY=… narrows the set);
#   kb1,kb2  the same, part 1 or 2 of two (KB_S seconds each);
#   tests  the GPU tests in TESTS;
#   chain  issue 53's eager chain beside PyTorch (bench_set.sh --chain on CHAIN_SET, CHAIN_S seconds;
#          CHAIN_ARGS=--compile adds torch.compile).
# Logs under $OUT; the table printed last.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:?OUT=DIR}; mkdir -p "$OUT"; STEPS=${STEPS:-main,set,api}
T=$OUT/table.txt; : > "$T"; t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$T"
. scripts/gpu/build.sh "$OUT/build.log"; echo "build $(el)" | tee -a "$T"
has() { case ,$STEPS, in *,$1,*) return 0;; esac; return 1; }
if has main; then
  rm -f /tmp/main_job.db
  for run in cold warm warm2; do
    s0=$(date +%s.%N)
    ./build/fusedtune --db /tmp/main_job.db tune --shape 128x16384x16384 --epilogue minsub > "$OUT/main_$run.txt" 2>&1
    echo "main job $run rc=$? $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $s0}") s" | tee -a "$T"
  done
  grep -A1 "^served" "$OUT/main_cold.txt" | tail -1 >> "$T"; grep -E "nothing to do" "$OUT/main_warm.txt" | cut -c1-160 >> "$T"
fi
if has set; then
  OUT=$OUT/set ONLY=${SET:-minsub,biasrelu,gelu4k,silu512,tanhsp,gelutanh,elusig,x2k48,xrag} GRAPH_ARGS="--rounds 15 --calls 10" \
    timeout "${SET_S:-300}" scripts/gpu/bench_set.sh /tmp/default_set.db default > "$OUT/set.txt" 2>&1
  echo "bench set default rc=$? $(el)" | tee -a "$T"; sed -n '/^problem/,$p' "$OUT/set/bench_graphs.txt" >> "$T"
fi
run_test() { # name limit [q: FT_TEST_QUICK=1, or NAME=VALUE,NAME=VALUE: that environment]
  local envs=${3:-}; [ "$envs" = q ] && envs=FT_TEST_QUICK=1
  set -- "$1" "$2" env ${envs//,/ }
  # ctest's environment (tests/CMakeLists.txt): without FT_WORKER gpu_test_tune fails its isolation check
  FT_TEST_TMP=$OUT FT_CLI=$PWD/build/fusedtune FT_WORKER=$PWD/build/fusedtune-worker FT_TEST_SRC=$PWD/tests/gpu \
    timeout "$2" "$3" "${@:4}" "./build/tests/$1" > "$OUT/$1.txt" 2>&1
  echo "$1 rc=$? $(el): $(grep -iE 'assertion|checked|passed|served' "$OUT/$1.txt" | tail -2 | cut -c1-160 | paste -sd' ')" | tee -a "$T"
  grep -E "FAIL|failed" "$OUT/$1.txt" | head -3 >> "$T"
}
has api && run_test gpu_test_api 90
for part in 0 1 2; do
  if [ $part = 0 ]; then has kb || continue; parts=1; p=1; else has kb$part || continue; parts=2; p=$part; fi
  OUT=$OUT KB=.kb/level2 DTYPE=fp32 PART=$p PARTS=$parts BUDGET=${KB_BUDGET:-15} TRIALS=${KB_TRIALS:-50} ARGS=${KB_ARGS:---no-compile} \
    timeout "${KB_S:-300}" scripts/gpu/kernelbench.sh > "$OUT/kb$part.txt" 2>&1
  echo "kb level2 fp32 part $part rc=$? $(el)" | tee -a "$T"; sed -n '/^problem/,$p' "$OUT/kb$part.txt" >> "$T"
done
if has host; then
  timeout "${HOST_TESTS_S:-150}" ctest --test-dir build -R "python_gpu_torch|python_torch_native" --output-on-failure > "$OUT/host_tests.txt" 2>&1
  echo "host tests rc=$? $(el): $(grep -E 'tests passed|Passed|Failed' "$OUT/host_tests.txt" | tail -4 | cut -c1-90 | paste -sd' ')" | tee -a "$T"
  FUSEDTUNE_LIBRARY=$PWD/build timeout "${HOST_S:-150}" python3 bench/python/bench_host.py --db /tmp/host.db --tune > "$OUT/bench_host.txt" 2>&1
  echo "bench_host rc=$? $(el)" | tee -a "$T"; tail -14 "$OUT/bench_host.txt" >> "$T"
fi
if has tests; then for t in ${TESTS:-}; do IFS=: read -r tn tl tq <<< "$t"; run_test "$tn" "$tl" "$tq"; done; fi
if has chain; then # issue 53: the stored eager chain's steps against PyTorch's kernels, CUDA graphs
  OUT=$OUT/chain ONLY=${CHAIN_SET:-gn16,gn32,gn64,gn512,bn16k,sm128,sm1k,smgelu} GRAPH_ARGS="--rounds 15 --calls 10 --chain ${CHAIN_ARGS:-}" \
    timeout "${CHAIN_S:-200}" scripts/gpu/bench_set.sh /tmp/chain.db bf16 > "$OUT/chain.txt" 2>&1
  echo "bench set chain rc=$? $(el)" | tee -a "$T"; sed -n '/^problem/,$p' "$OUT/chain/bench_graphs.txt" >> "$T"
fi
echo "total $(el)" | tee -a "$T"
echo; cat "$T"
