#!/usr/bin/env bash
# Starts a real Slurm cluster of N emulated nodes on this machine (default 2, at most 4):
# munged, slurmctld and one slurmd per node (`slurmd -N nX`), all on loopback. Prints
# `export SLURM_CONF=...`, so `eval "$(bash ci/slurm/start.sh 2)"` starts it and points this
# shell at it. Stop it with ci/slurm/stop.sh, which kills only the PIDs recorded here.
#
# A cluster already running from the same state directory is never torn down: with the same
# node count this attaches (prints its SLURM_CONF, exit 0); with another it refuses (exit 3)
# and says how to attach or stop it.
#
# Variables (see docs/clusters.md):
#   SCALEBENCH_SLURM_DIR     state, logs, slurm.conf, PIDs (default /tmp/scalebench-slurm)
#   SCALEBENCH_SLURM_SHARED  1: several jobs may share a node (default: one job per node)
# Nodes share this host, so results from them say `emulated_nodes: true`.
set -euo pipefail
nodes=${1:-2}
[[ "$nodes" =~ ^[1-4]$ ]] || { echo "ci/slurm/start.sh: nodes must be 1-4, not '$nodes'" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/../setup.sh" --slurm
dir=${SCALEBENCH_SLURM_DIR:-/tmp/scalebench-slurm}
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
if [ -f "$dir/pids" ]; then
  ctld=$(awk '$1 == "slurmctld" {print $2}' "$dir/pids")
  if [ -n "$ctld" ] && alive "$ctld"; then
    running=$(awk '$1 ~ /^slurmd-/' "$dir/pids" | wc -l)
    jobs=$(SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h 2>/dev/null | wc -l || true)
    if [ "$running" = "$nodes" ]; then
      echo "ci/slurm/start.sh: a cluster of $nodes node(s) already runs from $dir ($jobs job(s) queued or running): attached to it, not restarted" >&2
      echo "export SLURM_CONF=$dir/slurm.conf"
      exit 0
    fi
    echo "ci/slurm/start.sh: a cluster of $running node(s) already runs from $dir ($jobs job(s) queued or running); refusing to replace it with $nodes node(s)." >&2
    echo "  attach to it:  export SLURM_CONF=$dir/slurm.conf" >&2
    echo "  or stop it first (cancels its jobs): SCALEBENCH_SLURM_DIR=$dir bash ci/slurm/stop.sh" >&2
    echo "  or start another beside it: SCALEBENCH_SLURM_DIR=/tmp/other bash ci/slurm/start.sh $nodes" >&2
    exit 3
  fi
  # Recorded, but its controller is gone: clean up what is left of it.
  bash "$here/stop.sh" >/dev/null 2>&1 || true
fi
rm -rf "$dir"
# munged insists on private directories whose parents are not writable by others.
mkdir -p "$dir"/{state,spool,log,munge,tmp}
chmod 755 "$dir" "$dir/munge"
: > "$dir/pids"

mungekey -c -k "$dir/munge/munge.key" -f >/dev/null 2>&1
chmod 600 "$dir/munge/munge.key"
munged -F --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" \
  >/dev/null 2>&1 &
echo "munged $!" >> "$dir/pids"

cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) / 8 ))
# Exclusive nodes: two jobs on one node would measure each other's load.
oversubscribe=EXCLUSIVE
[ "${SCALEBENCH_SLURM_SHARED:-0}" = 1 ] && oversubscribe=NO
port0=$(( 17000 + RANDOM % 2000 ))
ctld_port=$(( port0 + 10 ))
cat > "$dir/slurm.conf" <<CONF
ClusterName=scalebench
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
TmpFS=$dir/tmp/%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
MpiDefault=pmix
ReturnToService=2
MailProg=/bin/true
MinJobAge=3600
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
DependencyParameters=kill_invalid_depend
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=n[1-$nodes] NodeAddr=127.0.0.1 Port=[$port0-$(( port0 + nodes - 1 ))] CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=$oversubscribe
TopologyPlugin=topology/tree
CONF
# Two leaf switches under one spine (the first half of the nodes, the rest; one leaf for one
# node), so `scontrol show topology` answers as on a real tree fabric (scalebench links
# orders and names blocks by it).
half=$(( (nodes + 1) / 2 ))
{
  echo "SwitchName=leaf1 Nodes=n[1-$half]"
  if [ "$nodes" -gt "$half" ]; then
    echo "SwitchName=leaf2 Nodes=n[$(( half + 1 ))-$nodes]"
    echo "SwitchName=spine Switches=leaf[1-2]"
  fi
} > "$dir/topology.conf"
for n in $(seq 1 "$nodes"); do mkdir -p "$dir/spool/n$n" "$dir/tmp/n$n"; done
export SLURM_CONF="$dir/slurm.conf"
slurmctld -D -f "$SLURM_CONF" >/dev/null 2>&1 &
echo "slurmctld $!" >> "$dir/pids"
for n in $(seq 1 "$nodes"); do
  slurmd -D -N "n$n" -f "$SLURM_CONF" >/dev/null 2>&1 &
  echo "slurmd-n$n $!" >> "$dir/pids"
done
# Wait (bounded) until every node is idle.
for _ in $(seq 1 100); do
  idle=$(timeout 5 sinfo -h -N -o '%T' 2>/dev/null | grep -c '^idle' || true)
  if [ "$idle" = "$nodes" ]; then
    echo "export SLURM_CONF=$SLURM_CONF"
    echo "ci/slurm/start.sh: $nodes emulated node(s) up; stop them with: SCALEBENCH_SLURM_DIR=$dir bash ci/slurm/stop.sh" >&2
    if [ "$nodes" -gt 1 ]; then
      # Exclusive nodes still share this host's cores: launches on n1 and n2 at once (array
      # twins) are marked co-scheduled, so their figures do not count as the set-up's.
      echo "  note: jobs on different emulated nodes share this host's cores; for 1-node results that run alone, start one node: bash ci/slurm/start.sh 1" >&2
    fi
    exit 0
  fi
  sleep 0.2
done
echo "ci/slurm/start.sh: nodes did not come up; see $dir/log/" >&2
timeout 5 sinfo -N >&2 || true
tail -n 5 "$dir"/log/*.log >&2 || true
exit 1
