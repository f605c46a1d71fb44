#!/bin/bash
# scalebench job: sweep golden, cuda 2x4 pure bind=none place=fill (004-9a122d583f470440)
#PBS -N golden-004
#PBS -l select=2:ncpus=64:mpiprocs=4:ngpus=4
#PBS -l walltime=01:00:00
#PBS -q gpu
#PBS -A P12345678
#PBS -j oe
#PBS -o /scratch/study/launches/
set -u
dir=/scratch/study/launches/004-9a122d583f470440
cd "$dir" || exit 1
module load openmpi cuda
sb=/opt/scalebench/bin/scalebench
started=$(date +%s.%N)
timeout --signal=TERM --kill-after=30 1200 mpiexec -n 8 "$sb" run -q --plan "$dir/plan.json" --out "$dir" 2> "$dir/stderr.log" &
launch=$!
"$sb" watch-launch --dir "$dir" --pid "$launch" &
watcher=$!
wait "$launch"
rc=$?
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
cat "$dir/stderr.log" >&2
"$sb" finish-launch --dir "$dir" --exit-code "$rc" --started "$started" --timeout-s 1200 --launcher mpiexec --job-id "${PBS_JOBID:-}"
exit "$rc"
