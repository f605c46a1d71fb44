#!/usr/bin/env bash
# Small isolated collectives (8-512 B, 2 ranks, f32 sum, out of place): this tree's scalebench
# against csrc/ref_collectives.c (OSU's loop) and, if given, another scalebench binary (an older
# commit), in alternating rounds. Prints per workload and size the median over rounds of each
# ratio. A bench, not part of CI (results/benchmarking-log.md, "Small isolated sizes").
#   bash ci/bench-small.sh [ROUNDS] [OTHER_SCALEBENCH_BINARY]     (default: 21 rounds)
# ORDER="ref new old" changes the order within a round (the VM shows a position effect of a
# few per cent: run both orders).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
rounds=${1:-21}
old=${2:-}
cargo build --release --locked --bin scalebench
new=${CARGO_TARGET_DIR:-target}/release/scalebench
work=$(mktemp -d /tmp/scalebench-small.XXXXXX)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/ref" csrc/ref_collectives.c
order=${ORDER:-old new ref}
[ -n "$old" ] || order=$(echo "$order" | sed 's/old//')
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load: $(uptime | sed 's/.*load/load/')"
for r in $(seq "$rounds"); do
  for side in $order; do
    case $side in
      ref) mpirun -np 2 "$work/ref" -m 8 -M 512 -c allreduce,allgather,alltoall -t osu -d 1 > "$work/ref.$r" ;;
      *) bin=$new; [ "$side" = old ] && bin=$old
         mpirun -np 2 "$bin" run -q --out "$work/$side.$r" -w allreduce,allgather,alltoall \
           -s 8B:512B:x2 --dtype f32 --op sum -t isolated --in-place no > /dev/null ;;
    esac
  done
done
python3 - "$work" "$rounds" "${old:+1}" <<'PY'
import json, statistics, sys
work, rounds, has_old = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def sb(p):
    d = {}
    for c in json.load(open(p + "/results.json"))["cases"]:
        if c["status"] == "ok":
            q = c["params"]
            d[(q["workload"], q["requested_bytes"])] = c["timing"]["time_s"] * 1e6
    return d
def ref(p):
    d = {}
    for line in open(p):
        f = line.split()
        if len(f) >= 5 and f[1] == "osu":
            d[(f[0], int(f[2]))] = float(f[4])
    return d
rs = range(1, rounds + 1)
new = [sb(f"{work}/new.{r}") for r in rs]
refs = [ref(f"{work}/ref.{r}") for r in rs]
old = [sb(f"{work}/old.{r}") for r in rs] if has_old else None
med = statistics.median
print("workload       bytes  new/ref" + ("  old/ref  new/old" if old else "") + "  ref µs (medians over rounds)")
for k in sorted(refs[0]):
    if k not in new[0]:
        continue
    row = f"{k[0]:14} {k[1]:5}  {med(n[k] / f[k] for n, f in zip(new, refs)):7.3f}"
    if old:
        row += f"  {med(o[k] / f[k] for o, f in zip(old, refs)):7.3f}"
        row += f"  {med(n[k] / o[k] for n, o in zip(new, old)):7.3f}"
    print(row + f"  {med(f[k] for f in refs):7.3f}")
PY
