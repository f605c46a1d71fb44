#!/bin/bash
# scalebench: merge the run's results after all its jobs (submitted with -hold_jid)
#$ -N golden-collect
#$ -S /bin/bash
#$ -j y
#$ -l h_rt=00:10:00
#$ -o /scratch/study/
set -u
exec /opt/scalebench/bin/scalebench collect /scratch/study --from-job "${JOB_ID:-}"
