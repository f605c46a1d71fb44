#!/usr/bin/env bash
# The main job on this machine: build scalebench and run the quick local study
# (examples/quick-local.toml: local MPI ranks, CPU backend, pure vs hybrid, bound to cores);
# prints progress and the results table, then writes a report (charts, HTML, Markdown, CSV).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
source ci/env.sh
cargo build --release --locked
bin=${CARGO_TARGET_DIR:-target}/release/scalebench
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out="results/quick-local-$stamp"
"$bin" sweep examples/quick-local.toml --out "$out"
"$bin" report "$out" --out "reports/quick-local-$stamp" --title "quick local study (one host, CPU backend)"
echo "results: $out/results.json"
echo "report:  reports/quick-local-$stamp/report.html (and report.md, results.csv, charts/)"
