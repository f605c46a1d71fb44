#!/usr/bin/env bash
# The main job on this machine: build scalebench and run the quick local study
# (examples/quick-local.toml: local MPI ranks, CPU backend, pure vs hybrid, bound to cores);
# prints progress, the results table, and where the results are.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
source ci/env.sh
cargo build --release --locked
out="results/quick-local-$(date -u +%Y%m%dT%H%M%SZ)"
target/release/scalebench sweep examples/quick-local.toml --out "$out"
echo "results: $out/results.json"
