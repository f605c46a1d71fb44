#!/usr/bin/env bash
# The project's tests, as CI runs them: formatting, lints (all targets and features, incl.
# the CUDA backend), a build without optional features, unit tests, and integration tests that
# start the real binary under real mpirun.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
source ci/env.sh

step() { printf '\n== %s ==\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "clippy (all targets, all features, -D warnings)"
cargo clippy --release --locked --all-targets --all-features -- -D warnings

step "build without optional features (report/compare on a laptop: no MPI, no CUDA)"
cargo build --release --locked --no-default-features

step "tests (unit + integration under mpirun)"
cargo test --release --locked --all-features
