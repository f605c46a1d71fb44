#!/bin/bash
# scalebench: merge the run's results after all its jobs (submitted with --dependency=afterany)
#SBATCH --job-name=golden-collect
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --time=10
#SBATCH --partition=gpu
#SBATCH --account=project_2001234
#SBATCH --output=/scratch/study/collect-%j.out
set -u
exec /opt/scalebench/bin/scalebench collect /scratch/study --from-job "${SLURM_JOB_ID:-}"
