#!/usr/bin/env bash
# The project's tests, as CI runs them: formatting, lints (all targets and features, incl.
# the CUDA backend; then the CUDA and the ROCm backend each alone), a build without optional
# features, unit tests, and integration tests that start the real binary under real mpirun and
# a real local Slurm cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh --slurm --browser
source ci/env.sh

step() { printf '\n== %s ==\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "clippy (all targets, all features, -D warnings)"
cargo clippy --release --locked --all-targets --all-features -- -D warnings

# Code used by only one GPU backend warns only when that backend is built alone (dead code,
# unreachable pub): the all-features lint above cannot see it. Lib and bin only (CI time).
step "clippy (CUDA backend alone, -D warnings)"
cargo clippy --release --locked --features cuda -- -D warnings
step "clippy (ROCm backend alone, -D warnings)"
cargo clippy --release --locked --features rocm -- -D warnings

step "build without optional features (report/compare on a laptop: no MPI, no CUDA)"
cargo build --release --locked --no-default-features

step "local Slurm cluster of 2 emulated nodes (stopped on exit, also when a test fails)"
trap 'bash ci/slurm/stop.sh' EXIT
eval "$(bash ci/slurm/start.sh 2)"
export SCALEBENCH_REQUIRE_SLURM=1
# The tests' launches fill a host-ceilings cache of their own, cold at each run (as on a fresh
# machine), never the user's ~/.cache, where a bound measured beside the tests would stay.
export SCALEBENCH_CEILINGS_CACHE="${CARGO_TARGET_DIR:-$PWD/target}/test-ceilings-cache"
rm -rf "$SCALEBENCH_CEILINGS_CACHE"

step "tests (unit; the integration binary, tests/integration, under mpirun and the real Slurm)"
cargo test --release --locked --all-features
SCALEBENCH_BIN=${CARGO_TARGET_DIR:-target}/release/scalebench bash ci/gpu-standin.sh  # CUDA backend on the stand-ins (~20 s)
SCALEBENCH_BIN=${CARGO_TARGET_DIR:-target}/release/scalebench bash ci/rocm-standin.sh  # ROCm backend on the stand-ins

step "benches, each run once (smoke test: that they build, set up, validate and run; never timing)"
cargo bench --locked --all-features -- --test

step "performance gate: this tree against the baseline commit, measured here, A/B alternating"
# The candidate is the binary the test step built (same features); the baseline commit is built
# beside it in a worktree with a target directory of its own, seeded from this one by hard links (only the crate recompiles).
SCALEBENCH_BIN=${CARGO_TARGET_DIR:-target}/release/scalebench bash ci/regression.sh

step "target/release/scalebench is this tree's build (the gate built the baseline in its own target)"
bin=${CARGO_TARGET_DIR:-target}/release/scalebench
version=$("$bin" --version)
head=$(git rev-parse --short=12 HEAD)
case "$version" in
  *"commit $head"*) echo "$version" ;;
  *) echo "ci/test.sh: $bin says '$version', but the tree is at $head: the baseline build replaced it" >&2; exit 1 ;;
esac
