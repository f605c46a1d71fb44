#!/usr/bin/env bash
# The main job on this machine: build scalebench and run a short study with 2 local MPI ranks
# on the CPU backend; prints the results table and where the results file is.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
source ci/env.sh
cargo build --release --locked
out="results/demo-$(date -u +%Y%m%dT%H%M%SZ)"
mpirun -np 2 target/release/scalebench run \
  --workload allreduce,allgather,reduce_scatter,alltoall,broadcast,matmul \
  --sizes 8B:4MiB:x4 --dims 512 --timing pipelined --out "$out"
echo "results: $out/results.json"
