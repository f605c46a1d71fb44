#!/usr/bin/env bash
# A launch's start-up overhead with the host cache of ceilings (issue 48 item 6; goal: median
# overhead_s <= 0.4 s for the demo's tiny launches), not part of CI's pass/fail. One untimed
# launch fills a fresh cache; then ROUNDS tiny launches (one allreduce case) on NP ranks that
# read it, alternating with as many --no-ceilings launches, in the same run. Prints each
# side's median overhead_s (launch wall time less its cases' time), their ratio, and the
# leaders' ceilings seconds (a cache hit: reading one file).
# Usage: bash ci/bench-overhead.sh [ROUNDS] [NP]   (default 7 rounds, 2 ranks)
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
rounds=${1:-7}
np=${2:-2}
target=${CARGO_TARGET_DIR:-target}
bin="$target/release/scalebench"
[ -x "$bin" ] || cargo build --release --all-features --bin scalebench
work=$(mktemp -d /tmp/scalebench-bench-overhead.XXXXXX)
trap 'rm -rf "$work"' EXIT
export SCALEBENCH_CEILINGS_CACHE="$work/cache"
launch() {  # OUT [ARGS...]
  local out=$1; shift
  mpirun -np "$np" --oversubscribe "$bin" run -q --out "$work/$out" -w allreduce --sizes 4KiB \
    --in-place no --iters 2 --warmup 0 "$@" > /dev/null
}
launch warm-up
for r in $(seq 1 "$rounds"); do
  launch "cached-$r"
  launch "none-$r" --no-ceilings
done
python3 - "$work" "$rounds" "$np" <<'PY'
import json, statistics, sys
work, rounds, np = sys.argv[1], int(sys.argv[2]), sys.argv[3]
over, own, reused = {"cached": [], "none": []}, [], 0
for r in range(1, rounds + 1):
    for side in over:
        l = json.load(open(f"{work}/{side}-{r}/results.json"))["launches"][0]
        over[side].append(l["overhead_s"])
        for h in l["provenance"].get("ceilings", []):
            own.append(h["seconds"])
            reused += bool(h.get("measurement", {}).get("reused"))
warm = json.load(open(f"{work}/warm-up/results.json"))["launches"][0]
first = [h["seconds"] for h in warm["provenance"].get("ceilings", [])]
with open("/proc/cpuinfo") as f:
    model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "unknown")
print(f"# CPU: {model}; {np} ranks on one host; {rounds} rounds alternating; medians")
print(f"filling the cache (untimed launch): ceilings {max(first, default=0):.3f} s")
print(f"cache hits: {reused} of {len(own)}; ceilings seconds median {statistics.median(own):.4f} s")
c, n = statistics.median(over["cached"]), statistics.median(over["none"])
print(f"overhead_s: with the cache {c:.3f} s, --no-ceilings {n:.3f} s, ratio {c / n:.2f}")
PY
