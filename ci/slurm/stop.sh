#!/usr/bin/env bash
# Stops the cluster ci/slurm/start.sh started: cancels its jobs, then stops exactly the PIDs it
# recorded (never by name), and waits until they are gone (zombies count as gone).
set -u
dir=${SCALEBENCH_SLURM_DIR:-/tmp/scalebench-slurm}
[ -f "$dir/pids" ] || exit 0
export SLURM_CONF="$dir/slurm.conf"
timeout 10 scancel --user="$(id -un)" >/dev/null 2>&1 || true
gone() { [ ! -e "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
# slurmd first (so no step is orphaned), then slurmctld, then munged.
for role in slurmd slurmctld munged; do
  for pid in $(awk -v r="$role" 'index($1, r) == 1 {print $2}' "$dir/pids"); do
    kill -TERM "$pid" 2>/dev/null || true
  done
done
for pid in $(awk '{print $2}' "$dir/pids"); do
  for _ in $(seq 1 50); do gone "$pid" && break; sleep 0.1; done
  gone "$pid" || kill -KILL "$pid" 2>/dev/null || true
done
rm -f "$dir/pids"
