#!/usr/bin/env bash
# Start-up cost of the ceilings each launch measures (issue 28 item 1; goal <= 0.5 s per host),
# not part of CI's pass/fail: ROUNDS tiny launches (one allreduce case) on NP ranks with the
# ceilings and as many with --no-ceilings, alternating. Prints the leader's own measurement
# time (provenance.ceilings[].seconds) and the difference of the launches' wall times, medians.
# Usage: bash ci/bench-launch-ceilings.sh [ROUNDS] [NP]   (default 5 rounds, 2 ranks)
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
rounds=${1:-5}
np=${2:-2}
target=${CARGO_TARGET_DIR:-target}
bin="$target/release/scalebench"
[ -x "$bin" ] || cargo build --release --all-features --bin scalebench
work=$(mktemp -d /tmp/scalebench-bench-launch-ceilings.XXXXXX)
trap 'rm -rf "$work"' EXIT
launch() {  # OUT [ARGS...]
  local out=$1; shift
  mpirun -np "$np" --oversubscribe "$bin" run -q --out "$work/$out" -w allreduce --sizes 4KiB \
    --in-place no --iters 2 --warmup 0 "$@" > /dev/null
}
for r in $(seq 1 "$rounds"); do
  launch "with-$r"
  launch "without-$r" --no-ceilings
done
python3 - "$work" "$rounds" "$np" <<'PY'
import json, statistics, sys
work, rounds, np = sys.argv[1], int(sys.argv[2]), sys.argv[3]
own, wall = [], {"with": [], "without": []}
for r in range(1, rounds + 1):
    for side in wall:
        d = json.load(open(f"{work}/{side}-{r}/results.json"))
        l = d["launches"][0]
        wall[side].append(l["wall_s"] if l.get("wall_s") is not None else l["finished_unix_s"] - l["started_unix_s"])
        for h in l["provenance"].get("ceilings", []):
            own.append(h["seconds"])
with open("/proc/cpuinfo") as f:
    model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "unknown")
print(f"# CPU: {model}; {np} ranks on one host; {rounds} rounds alternating; medians")
print(f"leader's measurement (provenance seconds): median {statistics.median(own):.3f} s, max {max(own):.3f} s")
w1, w0 = statistics.median(wall["with"]), statistics.median(wall["without"])
print(f"launch wall time: with ceilings {w1:.3f} s, --no-ceilings {w0:.3f} s, difference {w1 - w0:+.3f} s")
PY
