#!/usr/bin/env bash
# A real SLURM cluster on this machine, for tests/test_slurm.py and for trying the slurm
# profile by hand:
#   scripts/slurm/start.sh DIR   # start munged, slurmctld, a slurmd per node; all state under DIR
#   export SLURM_CONF=DIR/slurm.conf
#   scripts/slurm/stop.sh DIR    # stop every daemon this started
# Each node is declared with this machine's real CPUs and memory (`slurmd -C`), and with GPUS
# placeholder GPUs (default 2, the most any section uses) so that the per-rule GPU requests are
# scheduled for real; nothing is behind them. NODES (default 1) nodes, each a slurmd of its
# own on this one host (a node name and port each): the first is the host's name, the others
# <host>-2, <host>-3, ... Partition "debug" (the default) holds the first node only, so jobs
# there never run side by side; partition "multi" holds every node, for jobs that span nodes.
# The nodes share this host's cores, so what runs across them shows that it runs, not how
# fast a cluster would be.
# Everything (keys, configs, spool, state, logs, pid files) lives in DIR but one link: the
# executor's job step runs `srun` with every SLURM_* variable removed, SLURM_CONF too, so srun
# reads /etc/slurm/slurm.conf. That is made a link to DIR/slurm.conf, and only where there is
# no slurm.conf (a machine with a SLURM configuration of its own is left alone).
# Exit status 2, with the reason on stderr: SLURM cannot run here (not root, packages missing,
# a SLURM configuration in /etc); 1: it was started but did not come up (logs are in DIR).
set -euo pipefail

DIR=${1:?usage: start.sh STATE_DIR}
GPUS=${GPUS:-2}
NODES=${NODES:-1}
WAIT_S=${WAIT_S:-60}

cannot() {
  echo "cannot start SLURM here: $*" >&2
  exit 2
}
[ "$(id -u)" = 0 ] || cannot "needs root (slurmd and munged run as root here)"
for tool in munged slurmctld slurmd sbatch squeue sinfo scontrol srun; do
  command -v "$tool" >/dev/null || cannot "$tool not found (Debian: apt-get install slurm-wlm munge)"
done
command -v python3 >/dev/null || cannot "python3 not found (used to pick free ports)"

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
ETC_CONF=/etc/slurm/slurm.conf
# A link left by an earlier start whose folder is gone may be replaced; anything else is not ours.
if [ -e "$ETC_CONF" ] && [ "$(readlink "$ETC_CONF" || true)" != "$DIR/slurm.conf" ]; then
  cannot "$ETC_CONF exists (this machine has a SLURM configuration of its own; not touching it)"
fi
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
read -r CTLD_PORT SLURMD_PORTS < <(python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(1 + int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))' "$NODES")
read -r -a PORTS <<<"$SLURMD_PORTS"

HOST=$(hostname -s)
NAMES=("$HOST")
for ((i = 2; i <= NODES; i++)); do NAMES+=("$HOST-$i"); done
# slurmd -C: the node line with this machine's real CPUs, sockets, cores and memory.
NODE=$(slurmd -C | head -n 1)
case "$NODE" in NodeName=*" RealMemory="*) ;; *)
  echo "slurmd -C said: $NODE" >&2
  exit 1
  ;;
esac
GRES=""
if [ "$GPUS" -gt 0 ]; then GRES="Gres=gpu:$GPUS"; fi
# A line per node: this machine's description under the node's name, its own port.
NODE_LINES=""
for ((i = 0; i < NODES; i++)); do
  NODE_LINES+="NodeName=${NAMES[i]} NodeHostname=$HOST ${NODE#NodeName=* } NodeAddr=127.0.0.1"
  NODE_LINES+=" Port=${PORTS[i]} $GRES State=UNKNOWN"$'\n'
done
ALL=$(IFS=,; echo "${NAMES[*]}")

cat >"$DIR/slurm.conf" <<CONF
# Written by scripts/slurm/start.sh for a $NODES-node test cluster; all state under $DIR.
ClusterName=d2lperf-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd-%n.log
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
MailProg=/bin/true
${NODE_LINES%$'\n'}
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=multi Nodes=$ALL MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
# Placeholder GPUs: SLURM ignores a GPU without a device file, so each gets one under DIR, a
# character device that is /dev/null (1:3). They are scheduled and counted like real GPUs;
# nothing computes on them (the test runs the GPU sections on CPU contexts).
: >"$DIR/gres.conf"
if [ "$GPUS" -gt 0 ]; then
  for name in "${NAMES[@]}"; do
    mkdir -p "$DIR/gpu/$name"
    for ((i = 0; i < GPUS; i++)); do mknod "$DIR/gpu/$name/nvidia$i" c 1 3; done
    echo "NodeName=$name Name=gpu File=$DIR/gpu/$name/nvidia[0-$((GPUS - 1))]" >>"$DIR/gres.conf"
  done
fi

export SLURM_CONF="$DIR/slurm.conf"
mkdir -p "$(dirname "$ETC_CONF")"
ln -sfn "$SLURM_CONF" "$ETC_CONF"
# -i: ignore state left by an earlier start in the same folder.
slurmctld -f "$SLURM_CONF" -i
for name in "${NAMES[@]}"; do
  mkdir -p "$DIR/spool/$name"
  slurmd -f "$SLURM_CONF" -N "$name"
done

deadline=$((SECONDS + WAIT_S))
# Every node idle: sinfo's one line per node, each "idle".
until [ "$(sinfo -h -N -p multi -o %T 2>/dev/null | grep -cx idle)" = "$NODES" ]; do
  # A daemon that exited (bad config) will not come back: say so now, not after WAIT_S.
  # (Each writes its pid file just after it forks; give that a moment.)
  dead=""
  for name in slurmctld "${NAMES[@]/#/slurmd-}"; do
    pid=$(cat "$DIR/$name.pid" 2>/dev/null || true)
    if [ -n "$pid" ]; then
      kill -0 "$pid" 2>/dev/null || dead="$dead $name"
    elif [ "$SECONDS" -ge $((deadline - WAIT_S + 10)) ]; then
      dead="$dead $name"
    fi
  done
  if [ -n "$dead" ] || [ "$SECONDS" -ge "$deadline" ]; then
    echo "SLURM did not report its $NODES node(s) idle (daemons not running:${dead:- none});" \
      "sinfo says:" >&2
    sinfo -N -l >&2 2>&1 || true
    tail -n 20 "$DIR"/slurm*.log >&2 2>/dev/null || true
    exit 1
  fi
  sleep 0.5
done
echo "SLURM_CONF=$SLURM_CONF"
