#!/usr/bin/env bash
# A launch's start-up overhead with the host cache of ceilings (issue 48 item 6; goal: median
# overhead_s <= 0.4 s for the demo's tiny launches), not part of CI's pass/fail. One untimed
# launch fills a fresh cache; then ROUNDS tiny launches (one allreduce case) on NP ranks that
# read it, alternating with as many --no-ceilings launches, in the same run. Prints each
# side's median overhead_s (launch wall time less its cases' time), their ratio, and the
# leaders' ceilings seconds (a cache hit: reading one file).
# Then the demo study itself (examples/quick-local.toml, as ci/demo.sh runs it) DEMO times with
# the cache and as many times with --no-ceilings, alternating: each launch's overhead_s as the
# sweep records it (launcher wall time less the cases' time, so it includes mpirun and Open
# MPI's own start and end), beside a C program that only calls MPI_Init, MPI_Barrier and
# MPI_Finalize under the same mpirun (the floor no harness can go below).
# Usage: bash ci/bench-overhead.sh [ROUNDS] [NP] [DEMO]   (default 7 rounds, 2 ranks, 3 demos)
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
rounds=${1:-7}
np=${2:-2}
demos=${3:-3}
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
# The demo study, alternating; its sweeps share the one cache (a sweep's own default would be
# cold in each fresh --out).
for r in $(seq 1 "$demos"); do
  "$bin" sweep examples/quick-local.toml --out "$work/demo-cached-$r" > /dev/null
  "$bin" sweep examples/quick-local.toml --out "$work/demo-none-$r" --no-ceilings > /dev/null
done
# The MPI floor: a C program that starts and ends MPI, timed by the same mpirun.
printf '#include <mpi.h>\nint main(int c,char**v){MPI_Init(&c,&v);MPI_Barrier(MPI_COMM_WORLD);MPI_Finalize();return 0;}\n' > "$work/floor.c"
mpicc -O2 "$work/floor.c" -o "$work/floor"
for r in $(seq 1 "$rounds"); do
  t0=$(date +%s.%N); mpirun -np "$np" --oversubscribe "$work/floor"; t1=$(date +%s.%N)
  echo "$t0 $t1" >> "$work/floor.times"
done
python3 - "$work" "$rounds" "$np" "$demos" <<'PY'
import json, statistics, sys
work, rounds, np, demos = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
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
demo = {"cached": [], "none": []}
for r in range(1, demos + 1):
    for side in demo:
        for l in json.load(open(f"{work}/demo-{side}-{r}/results.json"))["launches"]:
            demo[side].append(l["overhead_s"])
floor = [float(b) - float(a) for a, b in (l.split() for l in open(f"{work}/floor.times"))]
dc, dn = statistics.median(demo["cached"]), statistics.median(demo["none"])
print(f"demo study ({demos} sweeps a side, {len(demo['cached'])} launches a side): overhead_s median "
      f"with the cache {dc:.3f} s, --no-ceilings {dn:.3f} s, ratio {dc / dn:.2f}")
print(f"MPI floor (C MPI_Init+Barrier+Finalize under the same mpirun, {np} ranks): median {statistics.median(floor):.3f} s")
PY
