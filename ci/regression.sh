#!/usr/bin/env bash
# Performance gate for CI, measured on the machine it runs on: the baseline is a *commit*
# (results/baselines/ci-small/commit), built here beside the candidate, and the two binaries
# run the same small study alternately (A B B A A B …, REGRESSION_RUNS times each) in one job.
# `scalebench compare` then judges every case on run-level statistics (one median per run), so
# run-to-run variance is in each interval. No committed absolute number decides anything: a
# machine of another kind measures both sides itself.
#
#   bash ci/regression.sh                 # check: exit 0 pass, 1 regression, 2 unusable
#   bash ci/regression.sh --accept        # record HEAD as the baseline commit (after an
#                                         # accepted performance change), then commit the file
#
# Environment:
#   SCALEBENCH_BIN       the candidate binary (default: cargo build of this tree)
#   REGRESSION_RUNS      runs per side (default 12; at least 2)
#   REGRESSION_NOISE     noise band, a fraction (default 0.10: see results/baselines/README.md)
#   REGRESSION_BASELINE  a commit to use instead of the recorded one
#   REGRESSION_REQUIRE_POWER=1  fail (exit 2) when the runs have too little power for the
#                        band, instead of warning and judging what they can see
#   REGRESSION_CANDIDATE_MPIRUN_ARGS  extra mpirun arguments for the candidate side only
#                        (the sensitivity study slows it with real Open MPI knobs this way)
# Reports: results/ci/ci-small/report.md (fit for a CI comment) and report.json.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh

name=ci-small
commit_file=results/baselines/$name/commit
work=results/ci/$name
runs=${REGRESSION_RUNS:-12}
noise=${REGRESSION_NOISE:-0.10}
target=${CARGO_TARGET_DIR:-$PWD/target}
case "$target" in /*) ;; *) target=$PWD/$target ;; esac

die() { echo "ci/regression.sh: $*" >&2; exit 2; }

if [ "${1:-}" = "--accept" ]; then
  git diff --quiet HEAD -- src Cargo.toml Cargo.lock build.rs csrc ||
    die "the tree has uncommitted changes to the code: commit them first, then accept"
  git rev-parse HEAD >"$commit_file"
  echo "ci/regression.sh: baseline commit is now $(cat "$commit_file"); commit $commit_file"
  exit 0
elif [ -n "${1:-}" ]; then
  die "unknown option $1 (expected --accept or nothing)"
fi
[[ "$runs" =~ ^[0-9]+$ ]] && [ "$runs" -ge 2 ] || die "REGRESSION_RUNS=$runs: give a whole number ≥ 2"

# The study: fixed iteration counts, so every run does the same work; short batches (far below
# a scheduler time slice), so a batch that nobody preempted sets the run's median. The cases
# are those whose run-to-run spread on a 2-core VM let a 25 % slowdown be seen with 8 runs a
# side (the sensitivity study in results/baselines/README.md).
study=(-w allreduce,allgather,broadcast,matmul --sizes 4KiB,64KiB --in-place no --dims 128
  --iters 400 --batches 40 --warmup 40)

mkdir -p "$work/bin"
rm -rf "$work/runs"
mkdir -p "$work/runs/baseline" "$work/runs/candidate"

# The candidate: the binary CI's test step built, else a build of this tree (the features of
# ci/test.sh's test step, so CI reuses that build instead of making another).
if [ -z "${SCALEBENCH_BIN:-}" ]; then
  cargo build --release --locked --all-features --bin scalebench
  SCALEBENCH_BIN=$target/release/scalebench
fi
cp "$SCALEBENCH_BIN" "$work/bin/candidate"

# Seeds a target profile directory $2 from $1 (see above): deps/ as hard links except the
# scalebench crate's own files, build/ and .fingerprint/ as copies without the crate's own.
seed_baseline_target() {
  local from=$1 to=$2
  rm -rf "$to"
  mkdir -p "$to/deps" "$to/build" "$to/.fingerprint"
  [ -d "$from/deps" ] || return 0
  (cd "$from/deps" && find . -maxdepth 1 -type f ! -name '*scalebench*' -print0 |
    xargs -0 -r cp -l -t "$to/deps" 2>/dev/null) ||
    (cd "$from/deps" && find . -maxdepth 1 -type f ! -name '*scalebench*' -print0 |
      xargs -0 -r cp -p -t "$to/deps")
  local d
  for d in build .fingerprint; do
    [ -d "$from/$d" ] || continue
    (cd "$from/$d" && find . -mindepth 1 -maxdepth 1 ! -name 'scalebench-*' -print0 |
      xargs -0 -r cp -a -t "$to/$d")
  done
}

# The baseline: the recorded commit, built in a worktree of its own into a target directory
# of its own ($target/regression-baseline), so it can never replace or touch this tree's
# binary or build-script output. That directory is seeded from this tree's target: the
# dependencies' artifacts as hard links (same name = same crate, version and flags, so even a
# rewrite puts the same bytes there), build-script outputs and fingerprints as real copies
# (cargo rewrites those in place); nothing of the scalebench crate itself, which the baseline
# builds anew. Only the crate recompiles.
base=${REGRESSION_BASELINE:-$(cat "$commit_file" 2>/dev/null || true)}
[ -n "$base" ] || die "no baseline commit in $commit_file: record one with bash ci/regression.sh --accept"
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  if [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
    # A shallow clone cannot build the baseline; say so loudly and judge the candidate
    # against itself, which still exercises the measurement and the statistics.
    echo "ci/regression.sh: WARNING: baseline commit $base is not in this shallow clone: the gate compares the candidate with itself (A/A); fetch full history for a real check" >&2
    cp "$work/bin/candidate" "$work/bin/baseline"
  else
    die "baseline commit $base (from $commit_file) is not in this repository: record an existing one with bash ci/regression.sh --accept"
  fi
else
  src=$work/baseline-src
  git worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
  git worktree prune
  git worktree add --detach --quiet "$src" "$base"
  trap 'git worktree remove --force "$src" 2>/dev/null || true' EXIT
  echo "ci/regression.sh: building the baseline $(git rev-parse --short=12 "$base") in $src"
  btarget=$target/regression-baseline
  seed_t0=$(date +%s%N)
  seed_baseline_target "$target/release" "$btarget/release"
  echo "ci/regression.sh: seeded $btarget in $(( ($(date +%s%N) - seed_t0) / 1000000 )) ms"
  mine=$(stat -c '%i %Y' "$target/release/scalebench" 2>/dev/null || true)
  (cd "$src" && SCALEBENCH_GIT_SHA=$(git rev-parse --short=12 HEAD) CARGO_TARGET_DIR=$btarget \
    cargo build --release --locked --all-features --bin scalebench)
  cp "$btarget/release/scalebench" "$work/bin/baseline"
  [ "$(stat -c '%i %Y' "$target/release/scalebench" 2>/dev/null || true)" = "$mine" ] ||
    die "the baseline build changed $target/release/scalebench (it must not): report this"
  git worktree remove --force "$src"
  trap - EXIT
fi

# One run of the study into directory $2 with binary $1 (extra mpirun arguments after).
measure() {
  local bin=$1 out=$2
  shift 2
  timeout -k 5 300 mpirun -np 2 "$@" "$bin" run -q --out "$out" "${study[@]}" >/dev/null ||
    die "a run of the study failed ($bin → $out)"
}

# shellcheck disable=SC2206 # word splitting of the knob list is intended
extra=(${REGRESSION_CANDIDATE_MPIRUN_ARGS:-})
echo "ci/regression.sh: $runs runs a side, alternating (ABBA order), noise band ±$noise"
for ((i = 1; i <= runs; i++)); do
  if ((i % 2)); then
    measure "$work/bin/baseline" "$work/runs/baseline/$i"
    measure "$work/bin/candidate" "$work/runs/candidate/$i" "${extra[@]}"
  else
    measure "$work/bin/candidate" "$work/runs/candidate/$i" "${extra[@]}"
    measure "$work/bin/baseline" "$work/runs/baseline/$i"
  fi
done

judge() {
  code=0
  "$work/bin/candidate" compare --noise "$noise" --format md --out "$work/report.json" "$@" \
    "$work/runs/baseline" -- "$work/runs/candidate" >"$work/report.md" 2>"$work/compare.err" || code=$?
  cat "$work/compare.err" >&2
}
judge
# compare refuses (exit 2) when the runs cannot see a change of the band's size (the median
# minimum detectable effect exceeds it). On a VM whose speed jumps between modes (seen here:
# the same binary at 22 and 40 µs per 64 KiB allreduce, run to run) 8 pairs cannot reach
# ±10 %: the gate then still fails on what it can see, says loudly that it is not decisive,
# and a person reads the MDE column. REGRESSION_REQUIRE_POWER=1 keeps the refusal.
if [ "$code" = 2 ] && grep -q "too little power" "$work/compare.err" &&
  [ "${REGRESSION_REQUIRE_POWER:-0}" != 1 ]; then
  echo "ci/regression.sh: WARNING: NOT DECISIVE: this machine's run-to-run noise is too high for $runs runs a side to see a change of ±$noise (MDE column below); judging what can be seen anyway (REGRESSION_REQUIRE_POWER=1 makes this an error)" >&2
  judge --allow-low-power
fi
cat "$work/report.md"
case $code in
  0) echo "ci/regression.sh: no regression against baseline $base (band ±$noise, $runs runs a side)" ;;
  1) echo "ci/regression.sh: REGRESSION against baseline $base (report: $work/report.md)" ;;
  *) echo "ci/regression.sh: the comparison is unusable (exit $code, message above); if case ids or metric definitions changed on purpose, make this commit the baseline: bash ci/regression.sh --accept, then commit $commit_file" >&2 ;;
esac
exit "$code"
