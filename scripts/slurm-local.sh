#!/usr/bin/env bash
# A one-node Slurm on this machine (controller and node daemon, Debian's
# packages), for the cluster test and for trying `aerolink experiment
# slurm`. Idempotent: does nothing if this Slurm already answers. Writes
# /etc/slurm/slurm.conf only if there is none (or it is ours).
set -euo pipefail
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)
conf=/etc/slurm/slurm.conf
marker="# written by aerolink scripts/slurm-local.sh"
if sinfo -h -o %T 2>/dev/null | grep -qE 'idle|mix|alloc'; then
  exit 0
fi
if [ -e "$conf" ] && ! grep -qF "$marker" "$conf"; then
  echo "slurm-local: $conf exists and is not ours; not touching it" >&2
  exit 1
fi
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
cat > "$conf" <<CONF
$marker
ClusterName=aerolink
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; }
chown munge:munge /etc/munge/munge.key /run/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld
pgrep -x slurmd >/dev/null || /usr/sbin/slurmd
for _ in $(seq 1 100); do
  if sinfo -h -o %T 2>/dev/null | grep -qE 'idle|mix|alloc'; then
    exit 0
  fi
  scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
  sleep 0.2
done
echo "slurm-local: the node did not become idle; see /var/log/slurm/" >&2
sinfo >&2 || true
exit 1
