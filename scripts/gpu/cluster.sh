#!/bin/bash
# Usage: [OUT=DIR] [BUDGET=4] [SKIP_BUILD=1] scripts/gpu/cluster.sh
# fusedtune.cluster on a GPU machine (issue 43), with `dask` on PATH and dask.distributed importable.
# Builds the library, CLI and worker (SQLITE_INCLUDE as for scripts/gpu/build.sh); tunes a file of
# five small problems with `fusedtune tune --problems` (the reference database); then starts a
# Dask scheduler and one worker here (`dask scheduler`, `dask worker` with the resources that
# `python3 -m fusedtune.cluster resources` prints) and tunes the same file through them with
# `python3 -m fusedtune.cluster tune`, killing the worker (SIGKILL to its nanny, worker and
# candidate process) once the first result has come back and starting it again. Then
# scripts/gpu/cluster_compare.py: each problem's best in both databases, and the cluster
# database's results against the worker-local databases' (nothing lost, nothing twice). Logs
# and the table (printed last) under $OUT. Exit status: the compare's (0: all checks hold).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/h200-logs}; mkdir -p "$OUT"
LOG=$OUT/cluster.log; : > "$LOG"
BUDGET=${BUDGET:-4}
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSQLite3_INCLUDE_DIR="${SQLITE_INCLUDE:-$PWD/.device/include}" \
    -DSQLite3_LIBRARY=/usr/lib/x86_64-linux-gnu/libsqlite3.so.0 >> "$LOG" 2>&1 || { tail -20 "$LOG"; exit 1; }
  cmake --build build -j16 --target fusedtune fusedtune_cli fusedtune_worker >> "$LOG" 2>&1 ||
    { grep -B2 -A6 error "$LOG" | head -40; exit 1; }
fi
echo "== build $(el)s"
export FUSEDTUNE_LIBRARY=$PWD/build/libfusedtune.so.0 PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
W=$(mktemp -d /tmp/ft_cluster.XXXXXX)
cat > "$W/problems.csv" <<'CSV'
shape,epilogue,math
256x1024x1024,biasrelu,bf16
512x512x1024,biasgelu,fp16
1024x1024x512,none,tf32
128x768x256,minsub,fp32
768x256x1024,biassilu,bf16
CSV

s=$(date +%s.%N)
timeout 120 ./build/fusedtune --db "$W/ref.db" tune --problems "$W/problems.csv" --budget "$BUDGET" > "$OUT/ref.txt" 2>> "$LOG"
echo "== tune --problems rc=$? $(python3 -c "print(f'{$(date +%s.%N) - $s:.1f}')") s"

dask scheduler --host 127.0.0.1 --port 8786 --no-dashboard > "$OUT/scheduler.log" 2>&1 &
sched=$!
res=$(python3 -m fusedtune.cluster resources) || { echo "no resources: $res"; exit 1; }
echo "== worker resources: $res"
start_worker() {  # its own session, so that one kill reaches the nanny, the worker and the tune's child
  setsid dask worker tcp://127.0.0.1:8786 --nthreads 1 --nworkers 1 --name h200-0 --no-dashboard \
    --resources "$res" >> "$OUT/worker.log" 2>&1 &
  wpid=$!
}
start_worker
s=$(date +%s.%N)
timeout 150 python3 -m fusedtune.cluster tune --problems "$W/problems.csv" --scheduler tcp://127.0.0.1:8786 \
  --db "$W/cluster.db" --budget "$BUDGET" --worker-db-dir "$W/wdb" --json > "$OUT/cluster.json" 2> "$OUT/cluster.err" &
client=$!
for _ in $(seq 1 600); do grep -q '^fusedtune.cluster: \[1/' "$OUT/cluster.err" && break; sleep 0.1; done
sleep 1.5
echo "== killing the worker (session $wpid) at $(python3 -c "print(f'{$(date +%s.%N) - $s:.1f}')") s: $(tail -n 1 "$OUT/cluster.err" | cut -c1-120)"
kill -KILL -- "-$wpid"
sleep 1
start_worker
wait "$client"; rc=$?
echo "== cluster tune rc=$rc $(python3 -c "print(f'{$(date +%s.%N) - $s:.1f}')") s"
grep '^fusedtune.cluster' "$OUT/cluster.err" | cut -c1-220
kill -KILL -- "-$wpid" 2>/dev/null; kill "$sched" 2>/dev/null
python3 scripts/gpu/cluster_compare.py "$W/problems.csv" "$W/ref.db" "$W/cluster.db" "$W/wdb" "$OUT/cluster.json" \
  | tee "$OUT/table.txt"
exit "${PIPESTATUS[0]}"
