#!/bin/bash
# scalebench job: sweep golden, cuda 1x4 hybrid bind=none place=fill (003-7cd007c3e56966bf)
#SBATCH --job-name=golden-003
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=40
#SBATCH --gres=gpu:v100:4
#SBATCH --mem=0
#SBATCH --time=60
#SBATCH --partition=gpu
#SBATCH --account=project_2001234
#SBATCH --output=/scratch/study/launches/slurm-%j.out
set -u
dir=/scratch/study/launches/003-7cd007c3e56966bf
cd "$dir" || exit 1
module load gcc/11.3.0 openmpi/4.1.4 cuda/11.7.0
sb=/opt/scalebench/bin/scalebench
started=$(date +%s.%N)
timeout --signal=TERM --kill-after=30 1200 srun --mpi=pmix --cpu-bind=none "$sb" run -q --plan "$dir/plan.json" --out "$dir" 2> "$dir/stderr.log" &
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
