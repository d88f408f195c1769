#!/bin/sh
# slurm.sh — a single-node Slurm cluster on this machine for `make test-scale`
# (docs/design/scale.md): munged, slurmctld and slurmd as root, all state under DIR, their own
# munge socket, so nothing of the machine's own configuration is read or changed.
#
# Usage: tests/scale/slurm.sh up DIR     start it; prints `export SLURM_CONF=DIR/slurm.conf`
#        tests/scale/slurm.sh down DIR   stop it (every daemon whose pid file is under DIR)
# Needs Debian's slurm-wlm and munge (apt-get install slurm-wlm munge), and root.
set -eu
usage='usage: slurm.sh up|down DIR'
cmd=${1:?$usage}; dir=${2:?$usage}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

down() {
  for pid in "$dir"/run/*.pid; do
    [ -f "$pid" ] || continue
    kill "$(cat "$pid")" 2>/dev/null || true
  done
  sleep 1
  for pid in "$dir"/run/*.pid; do
    [ -f "$pid" ] || continue
    kill -9 "$(cat "$pid")" 2>/dev/null || true
    rm -f "$pid"
  done
}

case $cmd in
down) down; exit 0 ;;
up) ;;
*) echo "$usage" >&2; exit 2 ;;
esac

for p in munged slurmctld slurmd sbatch; do
  command -v "$p" > /dev/null 2>&1 || PATH=$PATH:/usr/sbin
  command -v "$p" > /dev/null 2>&1 || { echo "slurm.sh: $p is not installed (apt-get install slurm-wlm munge)" >&2; exit 3; }
done
mkdir -p "$dir/run" "$dir/log" "$dir/state" "$dir/spool" "$dir/munge"
chmod 755 "$dir/munge"
[ -f "$dir/munge/munge.key" ] || { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2> /dev/null; chmod 400 "$dir/munge/munge.key"; }
host=$(hostname -s)
cpus=${SLURM_TEST_CPUS:-4}
cat > "$dir/slurm.conf" <<CONF
ClusterName=scaletest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=${SLURM_TEST_PORT:-16817}
SlurmdPort=$(( ${SLURM_TEST_PORT:-16817} + 1 ))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
JobRequeue=1
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MinJobAge=600
KillWait=5
NodeName=$host CPUs=$cpus RealMemory=1000 State=UNKNOWN
PartitionName=scale Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
rm -f "$dir/cgroup.conf"
down
munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
  --seed-file="$dir/munge/munge.seed" --force
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" -i
slurmd -f "$SLURM_CONF"
# Up when the node answers idle.
i=0
until sinfo -h -o '%t' 2>/dev/null | grep -q idle; do
  i=$((i + 1))
  if [ "$i" -gt 30 ]; then
    echo "slurm.sh: the node did not come up in 30 s (logs in $dir/log)" >&2
    tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
    exit 1
  fi
  sleep 1
done
echo "export SLURM_CONF=$SLURM_CONF"
