#!/bin/bash
# Usage: [OLD=.device/old.tar.gz] [TESTS="epilogue tc:bf16"] [JOBS="MxNxK:E:MODE|..."] [NCU=1] scripts/gpu/ab_epilogue.sh
# On the GPU machine: builds this tree (and, from the OLD source tarball, an earlier one), runs the
# GPU tests named in TESTS, then for each job times one variant of each epilogue form
# (scripts/gpu/pick_forms.py) with E and with E = x beside cuBLAS's GEMM (scripts/gpu/tc_variants.c),
# in each tree. NCU=1 adds ncu's issue and pipe counters for the first job's first two forms.
# Logs under $OUT; the table printed last.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-logs}; mkdir -p "$OUT"
T=$OUT/table.txt; : > "$T"; t0=$(date +%s); el() { echo "$(( $(date +%s) - t0 ))s"; }
cfg="-G Ninja -DCMAKE_BUILD_TYPE=Release -DSQLite3_INCLUDE_DIR=$PWD/.device/include -DSQLite3_LIBRARY=/usr/lib/x86_64-linux-gnu/libsqlite3.so.0"
trees="."
if [ -n "${OLD:-}" ]; then
  rm -rf /tmp/old && mkdir -p /tmp/old && tar xzf "$OLD" -C /tmp/old && cp -r .device /tmp/old/
  (cd /tmp/old && cmake -S . -B build $cfg -DFUSEDTUNE_BUILD_TESTS=OFF > "$OUT/build_old.log" 2>&1 &&
   cmake --build build -j6 >> "$OUT/build_old.log" 2>&1 && cp "$OLDPWD/scripts/gpu/"{tc_variants.c,build_tools.sh,pick_forms.py} /tmp/old/ &&
   mkdir -p scripts/gpu && cp tc_variants.c build_tools.sh pick_forms.py scripts/gpu/ && scripts/gpu/build_tools.sh build) &
  trees=". /tmp/old"
fi
cmake -S . -B build $cfg > "$OUT/build.log" 2>&1 && cmake --build build -j10 >> "$OUT/build.log" 2>&1 || { grep -B2 -A8 error "$OUT/build.log" | head -40; exit 1; }
scripts/gpu/build_tools.sh build || exit 1
wait
echo "builds $(el)" | tee -a "$T"
for t in ${TESTS-epilogue tc:bf16}; do
  case $t in
    epilogue) timeout 120 ./build/tests/gpu_test_epilogue > "$OUT/t_epi.txt" 2>&1; echo "gpu_test_epilogue rc=$? $(el)" | tee -a "$T"
      grep -E "^fast|FAIL|fail" "$OUT/t_epi.txt" | head -30 >> "$T" ;;
    tc:*) FT_TEST_MODE=${t#tc:} FT_TEST_QUICK=1 timeout 200 ./build/tests/gpu_test_tc > "$OUT/t_tc_${t#tc:}.txt" 2>&1
      echo "gpu_test_tc ${t#tc:} quick rc=$? $(el): $(grep -E '^summary' "$OUT/t_tc_${t#tc:}.txt" | cut -c1-160)" | tee -a "$T"
      grep -iE "fail" "$OUT/t_tc_${t#tc:}.txt" | head -5 >> "$T" ;;
  esac
done
J="1024x8192x8192:mish(mish(x + bias)):bf16|4096x14336x4096:silu(x):bf16|2048x8192x8192:tanh(softplus(x + bias)) * sigmoid(x + bias):bf16"
IFS='|' read -ra jobs <<< "${JOBS:-$J}"
first=1
for j in "${jobs[@]}"; do
  IFS=: read -r s e m <<< "$j"
  mapfile -t cfgs < <(./build/fusedtune variants --shape "$s" --epilogue "$e" --math "$m" --full --json | python3 scripts/gpu/pick_forms.py)
  for tree in $trees; do
    echo "== $tree $s '$e' $m $(el)" >> "$T"
    (cd $tree && timeout 240 ./build/tc_variants "$s" "$e" "$m" "${cfgs[@]}" 2>&1) | sed 's/,"layout":4//; s/{"kind":"gemm",//' >> "$T"
  done
  if [ "${NCU:-0}" = 1 ] && [ $first = 1 ]; then
    for c in "${cfgs[0]}" "${cfgs[3]}"; do
      timeout 200 ncu --clock-control none -k ft_gemm_tc -c 1 --section SpeedOfLight --section WarpStateStats \
        --section InstructionStats --section ComputeWorkloadAnalysis ./build/tc_variants "$s" "$e" "$m" "$c" > "$OUT/ncu_$first.txt" 2>&1
      echo "ncu rc=$? $c" >> "$T"
      grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|Issued Ipc|No Eligible|Stall|Executed Ipc|Tensor|pipe" "$OUT/ncu_$first.txt" | head -30 >> "$T"
      first=$((first+1))
    done
  fi
  first=0
done
echo "== total $(el)" | tee -a "$T"
cat "$T"
