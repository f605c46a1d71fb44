#!/usr/bin/env bash
# Stops the cluster ci/slurm/start.sh started: cancels its jobs and waits (bounded) until their
# steps and ranks are gone, then stops exactly the PIDs it recorded (never by name), and waits
# until they are gone (zombies count as gone). Ranks a killed step left behind are found as
# the children of this cluster's slurmstepd processes and ended with them.
set -u
dir=${SCALEBENCH_SLURM_DIR:-/tmp/scalebench-slurm}
[ -f "$dir/pids" ] || exit 0
export SLURM_CONF="$dir/slurm.conf"
gone() { [ ! -e "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
# Every descendant of the given PIDs (found through the parent field of /proc/*/stat).
descendants() {
  local todo=("$@") out=() p c
  while [ ${#todo[@]} -gt 0 ]; do
    p=${todo[0]}; todo=("${todo[@]:1}")
    for c in $(awk -v p="$p" '{ sub(/^.*\) /, ""); if ($2 == p) print FILENAME }' /proc/[0-9]*/stat 2>/dev/null \
               | sed -E 's|/proc/([0-9]+)/stat|\1|'); do
      out+=("$c"); todo+=("$c")
    done
  done
  echo "${out[@]:-}"
}
# This cluster's job steps: slurmstepd detaches from slurmd (its parent is PID 1) but keeps
# its node's slurmd log in $dir/log open, which no other cluster's step does.
steps() {
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    grep -qw "$p" <(awk '{print $2}' "$dir/pids") && continue
    ls -l "/proc/$p/fd" 2>/dev/null | grep -q -- "-> $dir/log/slurmd-" && echo "$p"
  done
}
timeout 10 scancel --user="$(id -un)" >/dev/null 2>&1 || true
# Cancelled jobs end their steps (KillWait=5 s); wait (bounded) for steps and ranks to go,
# then kill whatever is left: ranks first, then their steps.
for _ in $(seq 1 100); do
  [ -z "$(steps)" ] && break
  sleep 0.1
done
left=$(steps)
if [ -n "$left" ]; then
  ranks=$(descendants $left)
  [ -n "$ranks" ] && kill -KILL $ranks 2>/dev/null
  kill -KILL $left 2>/dev/null || true
fi
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
