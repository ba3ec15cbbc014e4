#!/bin/bash
# Usage: [TESTS="bf16 tf32"] [QUICK=1] [JOBS="1024x8192x8192:biasrelu:bf16 ..."] [NCU=JOB] scripts/gpu/probe.sh
# The tensor-core family on a GPU machine: its GPU tests, then per job a tune on a fresh database,
# the fastest tc kernels against cuBLAS's GEMM alone, and the bench; optionally ncu.
#
# TESTS: modes of gpu_test_tc to run (QUICK=1: FT_TEST_QUICK, one epilogue; FULL="bf16" runs
# those modes with every epilogue); SANITIZE="bf16 tf32": compute-sanitizer memcheck and
# racecheck over gpu_test_tc quick at 129x264x40 in those modes; GPU_CTEST=1: the other GPU
# tests (ctest -L gpu but gpu_test_tc, FT_TEST_QUICK); VARIANTS=1: gpu_test_variants quick.
# JOBS: shape:epilogue:mode, tuned with --strategy $STRATEGY (default exhaustive); by default
# relu(x + bias) in bf16 at 1024x8192xK for K 2048..16384 and at 2048x8192x8192 (the per-tile
# overhead is the intercept in K). BENCH=0 skips the bench. NCU=JOB profiles the bench of that
# job with ncu (--clock-control none; cuBLAS's kernel name says its tile, cluster and schedule).
# Logs: $OUT/probe.log; the table printed last. SQLITE_INCLUDE as for scripts/gpu/build.sh.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-logs}; mkdir -p "$OUT"
A=$OUT/probe.log
T=$OUT/table.txt; : > "$T"
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 ))s"; }
. scripts/gpu/build.sh "$A"
echo "build $(el)"
for m in ${TESTS-bf16 tf32} ${FULL-}; do
  q=${QUICK-1}; case " ${FULL-} " in *" $m "*) q= ;; esac
  FT_TEST_MODE=$m FT_TEST_QUICK=$q timeout 240 ./build/tests/gpu_test_tc > "$OUT/t.txt" 2>&1
  echo "gpu_test_tc $m${q:+ quick} rc=$? $(el): $(grep -E "^summary" "$OUT/t.txt" | cut -c1-160)" | tee -a "$T"
  grep "gpu_test_tc.c" "$OUT/t.txt" | head -3; cat "$OUT/t.txt" >> "$A"
done
for m in ${SANITIZE-}; do  # compute-sanitizer memcheck and racecheck on a small ragged shape
  for tool in memcheck racecheck; do
    FT_TEST_MODE=$m FT_TEST_QUICK=1 FT_TEST_SHAPE=129x264x40 timeout 240 compute-sanitizer --tool $tool \
      ./build/tests/gpu_test_tc > "$OUT/t.txt" 2>&1
    echo "sanitizer $tool $m rc=$? $(el): $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^summary" "$OUT/t.txt" | tr '\n' ' ' | cut -c1-200)" | tee -a "$T"
    cat "$OUT/t.txt" >> "$A"
  done
done
if [ "${GPU_CTEST:-0}" = 1 ]; then  # the other GPU tests, quick
  (cd build && FT_TEST_QUICK=1 timeout 300 ctest -L gpu -E "gpu_test_tc" --output-on-failure > "$OUT/t.txt" 2>&1)
  echo "ctest -L gpu -E gpu_test_tc rc=$? $(el): $(grep -E "tests passed|tests failed" "$OUT/t.txt")" | tee -a "$T"
  grep -E "\*\*\*Failed|Passed|Skipped" "$OUT/t.txt" | sed 's/^/  /' >> "$T"; cat "$OUT/t.txt" >> "$A"
fi
if [ "${VARIANTS:-0}" = 1 ]; then
  FT_TEST_QUICK=1 timeout 200 ./build/tests/gpu_test_variants > "$OUT/t.txt" 2>&1
  echo "gpu_test_variants rc=$? $(el): $(tail -1 "$OUT/t.txt" | cut -c1-120)" | tee -a "$T"; cat "$OUT/t.txt" >> "$A"
fi
export FUSEDTUNE_DB=$OUT/probe.db
K_JOBS="1024x8192x2048:biasrelu:bf16 1024x8192x4096:biasrelu:bf16 1024x8192x8192:biasrelu:bf16"
K_JOBS="$K_JOBS 1024x8192x16384:biasrelu:bf16 2048x8192x8192:biasrelu:bf16"
for j in ${JOBS-$K_JOBS}; do
  IFS=: read -r s e m <<< "$j"
  timeout 150 ./build/fusedtune tune --shape "$s" --epilogue "$e" --math "$m" --strategy "${STRATEGY:-exhaustive}" --quiet > "$OUT/t.txt" 2>&1
  echo "tune $j rc=$? $(el)"; cat "$OUT/t.txt" >> "$A"
  ./build/fusedtune export --format csv > "$OUT/e.csv" 2>>"$A"
  { echo "== $j"; grep -E "^  (cublas_gemm|cublaslt|eager) " "$OUT/t.txt" | head -3
    python3 - "$OUT/e.csv" "$s" "$m" <<'PY'
import csv, sys
m, n, k = sys.argv[2].split("x")
rows = [r for r in csv.DictReader(open(sys.argv[1])) if (r["m"], r["n"], r["k"], r["math"]) == (m, n, k, sys.argv[3])
        and r["variant"].startswith("tc_") and r["median_ms"]]
for r in sorted(rows, key=lambda r: float(r["median_ms"]))[:3]:
    print("  %-48s %.4f  %s" % (r["variant"], float(r["median_ms"]), r["rel_err"]))
PY
  } >> "$T"
  if [ "${BENCH:-1}" = 1 ]; then
    ./build/fusedtune bench --shape "$s" --epilogue "$e" --math "$m" > "$OUT/b.txt" 2>&1
    echo "bench rc=$?" >> "$T"; grep -vE "^NVIDIA|strategy" "$OUT/b.txt" >> "$T"
  fi
done
if [ -n "${NCU:-}" ]; then
  IFS=: read -r s e m <<< "$NCU"
  timeout 240 ncu --clock-control none --kernel-id ::regex:'nvjet|sm90|ft_gemm_tc|gemm':3 \
    --section SpeedOfLight --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    ./build/fusedtune bench --shape "$s" --epilogue "$e" --math "$m" --repeats 20 > "$OUT/ncu.txt" 2>&1
  echo "ncu rc=$? $(el)"
  grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|L2 Cache Throughput|DRAM Throughput|Grid Size|Cluster Size|L2 Hit" "$OUT/ncu.txt" | head -60 >> "$T"
fi
rm -f "$OUT"/t.txt "$OUT"/probe.db* "$OUT"/b.txt
echo "== total $(el)"
cat "$T"
