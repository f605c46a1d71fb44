#!/usr/bin/env bash
# Performance gate for CI: a small study measured now is compared with the baseline kept in
# results/baselines/ci-small/ (measured on a machine of the kind CI runs on: 2 cores, noisy).
# A case fails the gate only when its whole confidence interval is beyond the noise band, and
# a failing comparison is rerun once: only a regression the rerun confirms fails the job.
#
#   bash ci/regression.sh            # check: exit 0 pass, 1 confirmed regression, 2 unusable
#   bash ci/regression.sh --record   # measure 5 runs here, keep the most typical as the baseline
#
# Environment: SCALEBENCH_BIN (a built binary; default: cargo build), REGRESSION_NOISE (the
# noise band as a fraction; default 0.5, chosen from the run-to-run spread measured on this
# kind of machine: see results/baselines/ci-small/README.md).
# Reports: results/ci/ci-small/report-1.md (and report-2.md after a rerun), fit for a CI comment.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh

name=ci-small
baseline=results/baselines/$name
work=results/ci/$name
noise=${REGRESSION_NOISE:-0.5}

# The study. Fixed iteration counts, so every run does the same work; short batches (10
# operations, far below a scheduler time slice), so the median batch is one that no other
# process preempted: on a shared 2-core machine that is what keeps the spread near ±30 %
# instead of ×2. Sizes and workloads whose medians are bimodal between runs here (broadcast
# of 8 B; GEMMs whose batches outlast a time slice) are left out.
study=(-w allreduce,allgather,broadcast,matmul --sizes 4KiB,64KiB --in-place no --dims 128
  --iters 400 --batches 40 --warmup 40)

if [ -n "${SCALEBENCH_BIN:-}" ]; then
  bin=$SCALEBENCH_BIN
else
  # The features of ci/test.sh's test step, so CI reuses that build instead of making another.
  cargo build --release --locked --all-features --bin scalebench
  bin=${CARGO_TARGET_DIR:-target}/release/scalebench
fi

# One measurement of the study into directory $1: one launch, so a plain `mpirun ... run` (the
# sweep driver around it has its own tests, and would add start-up time, not information).
measure() {
  rm -rf "$1"
  timeout -k 5 300 mpirun -np 2 "$bin" run -q --out "$1" "${study[@]}"
}

# Compares run directory $1 with the baseline; writes report $2 (Markdown); returns compare's
# exit code (0 no regression, 1 regression, 2 unusable).
check() {
  local code=0
  "$bin" compare "$baseline" "$1" --noise "$noise" --out "$2" || code=$?
  return "$code"
}

record() {
  local runs=()
  for i in 1 2 3 4 5; do
    measure "$work/record-$i"
    runs+=("$work/record-$i")
  done
  # The most typical run: the one whose per-case medians are nearest (sum of |log ratio|) to the
  # medians over all runs. A fast or slow outlier run would make a poor reference.
  local pick
  pick=$(python3 - "${runs[@]}" <<'EOF'
import json, math, statistics, sys
runs = {d: {c["id"]: statistics.median(c["timing"]["samples_s"])
            for c in json.load(open(d + "/results.json"))["cases"] if c.get("timing")}
        for d in sys.argv[1:]}
ids = set.intersection(*(set(r) for r in runs.values()))
typical = {i: statistics.median(r[i] for r in runs.values()) for i in ids}
dist = {d: sum(abs(math.log(r[i] / typical[i])) for i in ids) for d, r in runs.items()}
for d in sorted(dist):
    print(f"{d}: distance {dist[d]:.3f}", file=sys.stderr)
print(min(dist, key=dist.get))
EOF
  )
  mkdir -p "$baseline"
  cp "$pick/results.json" "$baseline/results.json"
  echo "ci/regression.sh: baseline = $pick (copied to $baseline/results.json)"
  # Every recorded run must pass against the baseline chosen from them.
  for r in "${runs[@]}"; do
    check "$r" "$r/report.md" >/dev/null || {
      echo "ci/regression.sh: $r fails against the new baseline at --noise $noise: the machine is too noisy now, or the band too narrow (see $r/report.md)" >&2
      exit 1
    }
  done
  echo "ci/regression.sh: all ${#runs[@]} runs pass against it at --noise $noise; commit $baseline"
}

if [ "${1:-}" = "--record" ]; then
  record
  exit 0
elif [ -n "${1:-}" ]; then
  echo "ci/regression.sh: unknown option $1 (expected --record or nothing)" >&2
  exit 2
fi

if [ ! -f "$baseline/results.json" ]; then
  echo "ci/regression.sh: no baseline in $baseline: record one with bash ci/regression.sh --record" >&2
  exit 2
fi
mkdir -p "$work"
unusable() {
  echo "ci/regression.sh: the comparison is unusable (exit $1, message above). If the change is intended (new case ids, new metric definitions), re-record the baseline on a CI-like machine: bash ci/regression.sh --record, and commit $baseline" >&2
  exit 2
}

measure "$work/run-1"
code=0
check "$work/run-1" "$work/report-1.md" || code=$?
case $code in
  0) echo "ci/regression.sh: no regression against $baseline (noise band ±$noise)"; exit 0 ;;
  1) echo "ci/regression.sh: a regression against $baseline; rerunning the study to confirm it" ;;
  *) unusable "$code" ;;
esac

measure "$work/run-2"
code=0
check "$work/run-2" "$work/report-2.md" || code=$?
case $code in
  0) echo "ci/regression.sh: the rerun shows no regression: passing (the first run's report is $work/report-1.md)"; exit 0 ;;
  1) echo "ci/regression.sh: regression confirmed by the rerun (reports: $work/report-1.md, $work/report-2.md)"; exit 1 ;;
  *) unusable "$code" ;;
esac
