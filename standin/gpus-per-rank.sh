#!/usr/bin/env bash
# Runs "$@" with CUDA_VISIBLE_DEVICES set to this rank's own block of N stand-in devices
# (N = $1): what a launcher's GPU binding (Slurm --gpus-per-task) does on a real node. Lets
# emulated nodes on one host drive distinct devices: mpirun -np 2 gpus-per-rank.sh 2 scalebench ...
set -euo pipefail
n=$1
shift
r=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-0}}
CUDA_VISIBLE_DEVICES=$(seq -s, $((r * n)) $((r * n + n - 1)))
export CUDA_VISIBLE_DEVICES
exec "$@"
