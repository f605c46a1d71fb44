#!/usr/bin/env bash
# The links attribution's acceptance sweep (1,000 seeds per scenario unless given) and the
# time of a 1,024-host matrix and attribution, in release. Usage: bash ci/bench-links.sh [SEEDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
cargo run --release --example links_sweep -- "${1:-1000}"
