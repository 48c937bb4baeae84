#!/usr/bin/env bash
# Stops everything scripts/slurm/start.sh DIR started: the jobs still in the cluster, each slurmd,
# slurmctld and munged, by the pids they wrote under DIR (never by name, so another SLURM or
# munge on this machine is left alone), and the /etc/slurm/slurm.conf link if it is still
# start.sh's. Safe to run twice, or after a start that failed half way. Exit status 1 if a
# daemon is still alive at the end (after SIGKILL).
set -euo pipefail

DIR=${1:?usage: stop.sh STATE_DIR}
[ -d "$DIR" ] || exit 0
DIR=$(cd "$DIR" && pwd)
export SLURM_CONF="$DIR/slurm.conf"
WAIT_S=${WAIT_S:-30}

pid_of() { [ -s "$1" ] && cat "$1" 2>/dev/null || true; }
# A zombie is gone for our purpose (its parent has yet to reap it).
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null && [[ "$(ps -o stat= -p "$1")" != Z* ]]; }
# Wait (bounded) for every given pid to exit; SIGKILL whatever is left.
reap() {
  local deadline=$((SECONDS + WAIT_S)) pid left
  while :; do
    left=""
    for pid in "$@"; do alive "$pid" && left="$left $pid"; done
    [ -z "$left" ] && return 0
    [ "$SECONDS" -ge "$deadline" ] && break
    sleep 0.2
  done
  echo "still running after ${WAIT_S}s, killing:$left" >&2
  for pid in $left; do kill -KILL "$pid" 2>/dev/null || true; done
}

ctld=$(pid_of "$DIR/slurmctld.pid")
slurmd=$(for file in "$DIR"/slurmd-*.pid; do pid_of "$file"; done)
munged=$(pid_of "$DIR/munge/munged.pid")
# slurmctld's helper (slurmscriptd) is its child: by parent id, so that it is waited for too.
helpers=$([ -n "$ctld" ] && pgrep -P "$ctld" || true)

if alive "$ctld" && [ -f "$SLURM_CONF" ]; then
  # Jobs first: their slurmstepd processes outlive slurmd otherwise.
  steps=$(timeout 10 scontrol listpids 2>/dev/null | awk 'NR > 1 {print $1}' || true)
  for partition in debug multi; do
    timeout 10 scancel --full --quiet --partition=$partition 2>/dev/null || true
  done
  deadline=$((SECONDS + WAIT_S))
  while [ -n "$(timeout 10 squeue -h -t running,completing -o %i 2>/dev/null || true)" ] &&
    [ "$SECONDS" -lt "$deadline" ]; do
    sleep 0.5
  done
  # The job steps' processes (listed by slurmd before the cancel) must be gone as well.
  # shellcheck disable=SC2086
  [ -n "$steps" ] && reap $steps
  timeout 10 scontrol shutdown >/dev/null 2>&1 || true
fi
for pid in $slurmd $ctld; do kill -TERM "$pid" 2>/dev/null || true; done
# shellcheck disable=SC2086
reap $slurmd $ctld $helpers
# munged last: slurmctld and slurmd use it until they exit.
if alive "$munged"; then
  kill -TERM "$munged" 2>/dev/null || true
  reap "$munged"
fi
# The link start.sh made for srun, if it is still ours.
if [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null || true)" = "$SLURM_CONF" ]; then
  rm -f /etc/slurm/slurm.conf
fi
for pid in $slurmd $ctld $helpers $munged; do
  if alive "$pid"; then
    echo "pid $pid is still alive" >&2
    exit 1
  fi
done
