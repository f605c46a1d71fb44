#!/bin/bash
# scalebench job: sweep golden, cuda 2x4 hybrid bind=none place=fill (006-0b23dcda420f7d0c)
#$ -N golden-006
#$ -S /bin/bash
#$ -j y
#$ -o /scratch/study/launches/
#$ -pe parallel 96
#$ -l gpu=4
#$ -l gpu_type=ampere
#$ -l h_rt=01:00:00
set -u
dir=/scratch/study/launches/006-0b23dcda420f7d0c
cd "$dir" || exit 1
module load intelmpi cuda
sb=/opt/scalebench/bin/scalebench
started=$(date +%s.%N)
timeout --signal=TERM --kill-after=30 1200 mpirun -ppn 1 -n 2 "$sb" run -q --plan "$dir/plan.json" --out "$dir" 2> "$dir/stderr.log" &
launch=$!
"$sb" watch-launch --dir "$dir" --pid "$launch" &
watcher=$!
wait "$launch"
rc=$?
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
cat "$dir/stderr.log" >&2
"$sb" finish-launch --dir "$dir" --exit-code "$rc" --started "$started" --timeout-s 1200 --launcher mpirun --job-id "${JOB_ID:-}"
exit "$rc"
