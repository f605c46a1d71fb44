#!/usr/bin/env bash
# Where Open MPI's per-call temporaries land next to scalebench's buffers, and what it costs:
# the CI gate's study (ci/regression.sh) run in alternating rounds by this tree's scalebench and
# another binary (an older commit), each under csrc/cma_log.c, printing per run the 64 KiB
# all-reduce's time and the page offsets of the CMA copies' destinations (the temporaries);
# then csrc/copy_distance.c (the copy's cost by destination offset). A bench, not part of CI
# (results/benchmarking-log.md, "The MPI library's temporaries next to the buffers").
#   bash ci/bench-temporaries.sh OTHER_SCALEBENCH_BINARY [ROUNDS]      (default: 10 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
other=${1:?give another scalebench binary to compare with (e.g. an older commit\'s build)}
rounds=${2:-10}
cargo build --release --locked --all-features --bin scalebench
new=${CARGO_TARGET_DIR:-target}/release/scalebench
work=$(mktemp -d /tmp/scalebench-temporaries.XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O2 -shared -fPIC -o "$work/cma_log.so" csrc/cma_log.c -ldl
cc -O2 -o "$work/copy_distance" csrc/copy_distance.c
study=(-w allreduce,allgather,broadcast,matmul --sizes 4KiB,64KiB --in-place no --dims 128
  --iters 400 --batches 40 --warmup 40)
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load: $(uptime | sed 's/.*load/load/')"
for r in $(seq "$rounds"); do
  for side in new other; do
    bin=$new; [ "$side" = other ] && bin=$other
    rm -f /tmp/cma_log.*
    mpirun -np 2 -x LD_PRELOAD="$work/cma_log.so" "$bin" run -q --out "$work/$side.$r" "${study[@]}" >/dev/null
    # 32 KiB halves: the 64 KiB all-reduce's reduce-scatter and all-gather steps
    offs=$(cat /tmp/cma_log.* 2>/dev/null | awk '$4 == "len=32768" && $2 != "dst+0" {printf "%s ", $2}')
    python3 - "$work/$side.$r/results.json" "$side" "$r" "$offs" <<'PY'
import json, sys
path, side, r, offs = sys.argv[1:]
c = [c for c in json.load(open(path))["cases"]
     if c["params"]["workload"] == "allreduce" and c["bytes"] == 65536][0]
print(f"round {r:>2} {side:<5} allreduce 64 KiB {c['timing']['time_s'] * 1e6:6.1f} us   temporaries at {offs}")
PY
  done
done
"$work/copy_distance" 32768 9
