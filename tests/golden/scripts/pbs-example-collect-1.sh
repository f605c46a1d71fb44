#!/bin/bash
# scalebench: merge the run's results after all its jobs (submitted with -W depend=afterany)
#PBS -N golden-collect
#PBS -l select=1:ncpus=1
#PBS -l walltime=00:10:00
#PBS -q gpu
#PBS -A P12345678
#PBS -j oe
#PBS -o /scratch/study/
set -u
exec /opt/scalebench/bin/scalebench collect /scratch/study --from-job "${PBS_JOBID:-}"
