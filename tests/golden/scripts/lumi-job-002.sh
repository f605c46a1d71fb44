#!/bin/bash
# scalebench job: sweep golden, cuda 1x4 pure bind=none place=round_robin (002-42d1c7b5b56aa985)
#SBATCH --job-name=golden-002
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=7
#SBATCH --gpus-per-node=4
#SBATCH --mem-per-gpu=60G
#SBATCH --time=60
#SBATCH --partition=standard-g
#SBATCH --account=project_465000123
#SBATCH --output=/scratch/study/launches/slurm-%j.out
set -u
dir=/scratch/study/launches/002-42d1c7b5b56aa985
cd "$dir" || exit 1
module load LUMI/23.09 partition/G
export CXI_FORK_SAFE=1
export CXI_FORK_SAFE_HP=1
export FI_CXI_DISABLE_CQ_HUGETLB=1
export MPICH_GPU_SUPPORT_ENABLED=1
export NCCL_NET_GDR_LEVEL=PHB
export NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3
sb=/opt/scalebench/bin/scalebench
started=$(date +%s.%N)
timeout --signal=TERM --kill-after=30 1200 srun --mpi=pmix --cpu-bind=none --distribution=cyclic "$sb" run -q --plan "$dir/plan.json" --out "$dir" 2> "$dir/stderr.log" &
launch=$!
"$sb" watch-launch --dir "$dir" --pid "$launch" &
watcher=$!
wait "$launch"
rc=$?
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
cat "$dir/stderr.log" >&2
"$sb" finish-launch --dir "$dir" --exit-code "$rc" --started "$started" --timeout-s 1200 --launcher srun --job-id "${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-}}${SLURM_ARRAY_TASK_ID:+_$SLURM_ARRAY_TASK_ID}"
exit "$rc"
