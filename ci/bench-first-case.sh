#!/usr/bin/env bash
# The 8 B isolated all-reduce as a launch's first case, against the same case after a 4 B one
# and against the C reference (itself also after a 4 B case) (csrc/ref_collectives.c, OSU's loop), 2 ranks, in alternating
# rounds; then the same with Open MPI's shared-memory fast boxes off. Prints the medians over
# rounds of the ratios and of each rank's mean. A bench, not part of CI (issue 23 item 8;
# results/benchmarking-log.md, "The 8 B first case").
#   bash ci/bench-first-case.sh [ROUNDS]     (default: 15 rounds per setting)
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
rounds=${1:-15}
cargo build --release --locked --bin scalebench
sb=${CARGO_TARGET_DIR:-target}/release/scalebench
work=$(mktemp -d /tmp/scalebench-first.XXXXXX)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/ref" csrc/ref_collectives.c
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load: $(uptime | sed 's/.*load/load/')"
one=(run -q -w allreduce --dtype f32 --op sum -t isolated --in-place no)
for fbox in on off; do
  # A threshold no launch reaches: every message goes through the ordinary queues.
  extra=()
  [ "$fbox" = off ] && extra=(--mca btl_vader_fbox_threshold 100000000)
  for r in $(seq "$rounds"); do
    mpirun "${extra[@]}" -np 2 "$work/ref" -m 8 -M 8 -c allreduce -t osu -d 1 -r 1 > "$work/ref.$fbox.$r"
    mpirun "${extra[@]}" -np 2 "$sb" "${one[@]}" --out "$work/first.$fbox.$r" -s 8B > /dev/null
    mpirun "${extra[@]}" -np 2 "$sb" "${one[@]}" --out "$work/after.$fbox.$r" -s 4B,8B > /dev/null
    # The reference's own 8 B after a 4 B case: how much the library's history moves it.
    mpirun "${extra[@]}" -np 2 "$work/ref" -m 4 -M 8 -c allreduce -t osu -d 1 -r 1 > "$work/refafter.$fbox.$r"
  done
done
python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
med = statistics.median
def sb(p):
    for c in json.load(open(p + "/results.json"))["cases"]:
        if c["params"]["requested_bytes"] == 8 and c["status"] == "ok":
            t = c["timing"]
            return t["time_s"] * 1e6, [x * 1e6 for x in t["per_rank_mean_s"]]
    raise SystemExit(f"{p}: no 8 B case")
def ref(p):
    mean, ranks = None, {}
    for line in open(p):
        f = line.split()
        if f[:2] == ["#", "rank"] and f[5] == "8":
            ranks[int(f[2])] = float(f[6])
        elif len(f) >= 5 and f[1] == "osu" and f[2] == "8":
            mean = float(f[4])
    return mean, [ranks[k] for k in sorted(ranks)]
print("fast boxes  ref µs  first/ref  after4B/ref  first/after4B  ref-after4B/ref   rank means µs: ref | first | after 4 B")
for fbox in ("on", "off"):
    rs = range(1, rounds + 1)
    R = [ref(f"{work}/ref.{fbox}.{r}") for r in rs]
    A = [sb(f"{work}/first.{fbox}.{r}") for r in rs]
    B = [sb(f"{work}/after.{fbox}.{r}") for r in rs]
    C = [ref(f"{work}/refafter.{fbox}.{r}") for r in rs]
    ratio = lambda x, y: med(a[0] / b[0] for a, b in zip(x, y))
    ranks = lambda x: " ".join(f"{med(v):.3f}" for v in zip(*[a[1] for a in x]))
    print(f"{fbox:10}  {med(r[0] for r in R):6.3f}  {ratio(A, R):9.3f}  {ratio(B, R):11.3f}  {ratio(A, B):13.3f}  {ratio(C, R):15.3f}"
          f"   {ranks(R)} | {ranks(A)} | {ranks(B)}")
PY
