#!/usr/bin/env bash
# A real single-node SLURM cluster on this machine, for tests/test_slurm.py and for trying
# the slurm profile by hand:
#   scripts/slurm/start.sh DIR   # start munged, slurmctld, slurmd; all state under DIR
#   export SLURM_CONF=DIR/slurm.conf
#   scripts/slurm/stop.sh DIR    # stop every daemon this started
# Everything (keys, configs, spool, state, logs, pid files) lives in DIR, nothing in /etc, so
# it never touches a cluster configured on the machine. The node is declared with this
# machine's real CPUs and memory (`slurmd -C`), and with GPUS placeholder GPUs (default 2, the
# most any section uses) so that the per-rule GPU requests are scheduled for real; nothing is
# behind them. Exit status 2 with a reason on stderr: SLURM cannot run here (not root,
# packages missing); 1: it was started but did not come up (logs are in DIR).
set -euo pipefail

DIR=${1:?usage: start.sh STATE_DIR}
GPUS=${GPUS:-2}
WAIT_S=${WAIT_S:-60}

cannot() { echo "cannot start SLURM here: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || cannot "needs root (slurmd runs jobs as any user, munged and slurmd as root)"
for tool in munged slurmctld slurmd sbatch squeue sinfo scontrol srun; do
  command -v "$tool" >/dev/null || cannot "$tool not found (Debian: apt-get install slurm-wlm munge)"
done
command -v python3 >/dev/null || cannot "python3 not found (used to pick free ports)"

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
# munged wants its socket's folders searchable by all, writable by the owner only.
chmod 755 "$DIR"
mkdir -p "$DIR/munge" "$DIR/ctld" "$DIR/spool"
chmod 755 "$DIR/munge"

# One key for this cluster only, never the machine's /etc/munge/munge.key.
dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$DIR/munge/munge.key"
munged --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
  --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" \
  --seed-file="$DIR/munge/munged.seed"

# Free ports, so that a SLURM already running here (6817/6818) is neither hit nor in the way.
read -r CTLD_PORT SLURMD_PORT < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')

HOST=$(hostname -s)
# slurmd -C: the node line with this machine's real CPUs, sockets, cores and memory.
NODE=$(slurmd -C | head -n 1)
case "$NODE" in NodeName=*" RealMemory="*) ;; *) echo "slurmd -C said: $NODE" >&2; exit 1 ;; esac
GRES=""
[ "$GPUS" -gt 0 ] && GRES="Gres=gpu:$GPUS"

cat > "$DIR/slurm.conf" <<CONF
# Written by scripts/slurm/start.sh for a one-node test cluster; all state under $DIR.
ClusterName=d2lperf-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: this may run in a container whose cgroup tree SLURM cannot manage. Jobs are
# still tracked (linuxproc) and pinned to the CPUs they were given (affinity), as on a cluster.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
# No slurmdbd: the executor's squeue status mode; finished jobs stay visible to squeue and
# scontrol for MinJobAge seconds, longer than the test runs.
AccountingStorageType=accounting_storage/none
# Track GPUs as a TRES so that scontrol shows what each job was given.
AccountingStorageTRES=gres/gpu
JobCompType=jobcomp/none
MinJobAge=600
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
$NODE NodeAddr=127.0.0.1 $GRES State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
# Placeholder GPUs: SLURM ignores a GPU without a device file, so each gets an empty file
# under DIR. They are scheduled and counted like real ones; nothing computes on them (the
# test runs the GPU sections on CPU contexts).
: > "$DIR/gres.conf"
if [ "$GPUS" -gt 0 ]; then
  mkdir -p "$DIR/gpu"
  for ((i = 0; i < GPUS; i++)); do : > "$DIR/gpu/nvidia$i"; done
  echo "NodeName=$HOST Name=gpu File=$DIR/gpu/nvidia[0-$((GPUS - 1))]" > "$DIR/gres.conf"
fi

export SLURM_CONF="$DIR/slurm.conf"
# -i: ignore state left by an earlier start in the same folder.
slurmctld -f "$SLURM_CONF" -i
slurmd -f "$SLURM_CONF"

deadline=$((SECONDS + WAIT_S))
until [ "$(sinfo -h -n "$HOST" -o %T 2>/dev/null)" = idle ]; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "SLURM did not report node $HOST idle within ${WAIT_S}s; sinfo says:" >&2
    sinfo -N -l >&2 2>&1 || true
    tail -n 20 "$DIR/slurmctld.log" "$DIR/slurmd.log" >&2 2>/dev/null || true
    exit 1
  fi
  sleep 0.5
done
echo "SLURM_CONF=$SLURM_CONF"
