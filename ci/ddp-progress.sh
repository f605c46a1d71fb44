#!/usr/bin/env bash
# ddp_step on the CPU backend: which progress strategy should be the default? Runs the same
# step with a progress thread (A) and with MPI_Test between GEMM tiles (B) in separate
# launches, alternating A/B for ROUNDS pairs, and prints per configuration the medians of
# step_s, compute_s, comm_s and overlap efficiency, and the ratio of medians B/A (> 1: the
# thread is faster). Not part of CI's pass/fail; the machine's load goes beside the figures.
# Usage: bash ci/ddp-progress.sh [ROUNDS]   (default 5 pairs; SCALEBENCH_BIN to skip the build)
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
rounds=${1:-5}
bin=${SCALEBENCH_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --locked --bin scalebench
  bin=${CARGO_TARGET_DIR:-target}/release/scalebench
fi
work=$(mktemp -d /tmp/scalebench-ddp-progress.XXXXXX)
trap 'rm -rf "$work"' EXIT
# (ranks, model, batch, bucket): a small step dominated by communication, a compute-heavy one.
# One cap for every bucket (--first-bucket 0B), as when docs/ddp.md's figures were measured.
configs=("2 256x256x8 64 256KiB" "2 1024x1024x8 64 4MiB")
echo "# load before: $(uptime)"
for r in $(seq "$rounds"); do
  for c in "${!configs[@]}"; do
    read -r np model batch bucket <<<"${configs[$c]}"
    for p in thread test; do
      mpirun -np "$np" --oversubscribe --bind-to none "$bin" run -q -w ddp_step --model "$model" \
        --batch "$batch" --bucket-size "$bucket" --first-bucket 0B --progress "$p" -n 5 --warmup 2 \
        --out "$work/$c-$p-$r" >/dev/null
    done
  done
done
echo "# load after:  $(uptime)"
python3 - "$work" "$rounds" "${configs[@]}" <<'PY'
import json, statistics, sys
work, rounds, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def figs(c, p):
    out = []
    for r in range(1, rounds + 1):
        case = json.load(open(f"{work}/{c}-{p}-{r}/results.json"))["cases"][0]
        assert case["status"] == "ok" and case["wrong"] == 0, case
        out.append(case["ddp"])
    return out
print(f"{'ranks model batch bucket':34} {'progress':8} {'step':>10} {'compute':>10} {'comm':>10} {'overlap':>8}")
for c, cfg in enumerate(configs):
    med = {}
    for p in ("thread", "test"):
        f = figs(c, p)
        m = {k: statistics.median(x[k] for x in f) for k in ("step_s", "compute_s", "comm_s")}
        m["eff"] = statistics.median((x["overlap_efficiency"] or 0.0) for x in f)
        med[p] = m
        print(f"{cfg:34} {p:8} {m['step_s']*1e3:8.3f}ms {m['compute_s']*1e3:8.3f}ms "
              f"{m['comm_s']*1e3:8.3f}ms {m['eff']*100:7.1f}%")
    print(f"{cfg:34} step_s median ratio test/thread = {med['test']['step_s']/med['thread']['step_s']:.2f}"
          f" (medians of {rounds} alternating pairs)")
PY
