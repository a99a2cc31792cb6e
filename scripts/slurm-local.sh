#!/usr/bin/env bash
# A one-node Slurm on this machine (controller and node daemon, Debian's
# packages), for the cluster test and for trying `aerolink experiment
# slurm`.
#
#   scripts/slurm-local.sh [start]     start what is not running; prints the
#                                      daemons it started, one per line
#   scripts/slurm-local.sh stop [D…]   stop daemons D (munged, slurmctld,
#                                      slurmd; all three if none is named)
#
# `start` is idempotent: it does nothing if this Slurm already answers. It
# writes /etc/slurm/slurm.conf only if there is none (or it is ours); `stop`
# touches nothing but the daemons of a Slurm whose configuration is ours.
set -euo pipefail
conf=/etc/slurm/slurm.conf
marker="# written by aerolink scripts/slurm-local.sh"
case "${1:-start}" in
  start) ;;
  stop)
    shift
    if [ -e "$conf" ] && ! grep -qF "$marker" "$conf"; then
      echo "slurm-local: $conf is not ours; not stopping its daemons" >&2
      exit 1
    fi
    daemons=("$@")
    [ ${#daemons[@]} -gt 0 ] || daemons=(slurmd slurmctld munged)
    for d in "${daemons[@]}"; do
      case "$d" in
        munged|slurmctld|slurmd) ;;
        *) echo "slurm-local: stop: unknown daemon '$d' (allowed: munged, slurmctld, slurmd)" >&2; exit 2 ;;
      esac
    done
    # The node daemon first, the controller next, munge (their
    # authentication) last; each is waited for, so a following start finds
    # its pid file and port free.
    for d in slurmd slurmctld munged; do
      [[ " ${daemons[*]} " == *" $d "* ]] || continue
      pkill -x "$d" 2>/dev/null || continue
      for _ in $(seq 1 50); do
        pgrep -x "$d" >/dev/null || break
        sleep 0.1
      done
      pgrep -x "$d" >/dev/null && pkill -9 -x "$d" || true
    done
    exit 0 ;;
  *) echo "slurm-local: unknown command '$1' (allowed: start, stop)" >&2; exit 2 ;;
esac
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)
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
pgrep -x munged >/dev/null || { runuser -u munge -- /usr/sbin/munged; echo munged; }
pgrep -x slurmctld >/dev/null || { /usr/sbin/slurmctld; echo slurmctld; }
pgrep -x slurmd >/dev/null || { /usr/sbin/slurmd; echo slurmd; }
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
