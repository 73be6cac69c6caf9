#!/usr/bin/env bash
# Runs one task and starts it again when it dies, as an orchestrator would (Kubernetes'
# restartPolicy, docker's restart: on-failure): at most --max_restarts restarts, --delay_secs
# apart, one log line on stderr per restart. SIGTERM and SIGINT go to the task and the supervisor
# exits with the task's status; a task that exits 0 is done, and one that exits 2 (bad
# configuration), 126 or 127 (not executable, not found) is not started again: restarting cannot help.
#   deploy/local/supervise.sh [--max_restarts 5 (0..1000)] [--delay_secs 1 (0..3600)] [--name ps:1] -- COMMAND [ARGS...]
# (--flag=value works too.) Environment (TF_CONFIG etc.) passes to the task unchanged.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
MAX_RESTARTS=5 DELAY_SECS=1 NAME=""
usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; }
# shellcheck source=deploy/args.sh
source "$HERE/../args.sh"
args_normalize "help" "$@"
set -- "${ARGS[@]}"
while [ $# -gt 0 ]; do
  case "$1" in
    --max_restarts) MAX_RESTARTS=$2; shift 2 ;;
    --delay_secs) DELAY_SECS=$2; shift 2 ;;
    --name) NAME=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) echo "supervise: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "supervise: no command given (put it after --)" >&2; usage >&2; exit 2; }
# Bounded before any arithmetic: bash's integers wrap past 2^63 and `[ -ge ]` fails on them, which
# would turn a huge --max_restarts into restarts without end.
[[ "$MAX_RESTARTS" =~ ^[0-9]{1,4}$ ]] && [ "$MAX_RESTARTS" -le 1000 ] ||
  { echo "supervise: --max_restarts \"$MAX_RESTARTS\" must be an integer in 0..1000" >&2; exit 2; }
[[ "$DELAY_SECS" =~ ^[0-9]{1,4}([.][0-9]{1,6})?$ ]] && [ "${DELAY_SECS%%.*}" -lt 3600 ] || [ "$DELAY_SECS" = 3600 ] ||
  { echo "supervise: --delay_secs \"$DELAY_SECS\" must be a number of seconds in 0..3600" >&2; exit 2; }
NAME=${NAME:-$(basename "$1")}

say() { echo "[supervise $(date +%H:%M:%S)] $NAME: $*" >&2; }

CHILD="" STOPPING=0
forward() {  # forward SIGNAL: to the task; the supervisor then waits for it and exits
  STOPPING=1
  [ -n "$CHILD" ] && kill -"$1" "$CHILD" 2>/dev/null
}
trap 'forward TERM' TERM
trap 'forward INT' INT

restarts=0
while :; do
  "$@" &
  CHILD=$!
  rc=0
  wait "$CHILD" || rc=$?
  if [ "$STOPPING" = 1 ]; then
    # A trapped signal interrupts `wait` while the task shuts down: wait until it has exited, then
    # once more for its own status (bash keeps it).
    while kill -0 "$CHILD" 2>/dev/null; do wait "$CHILD" || true; done
    rc=0
    wait "$CHILD" || rc=$?
  fi
  CHILD=""
  if [ "$STOPPING" = 1 ]; then
    say "stopped by a signal; the task exited with status $rc"
    exit "$rc"
  fi
  if [ "$rc" = 0 ]; then exit 0; fi
  case "$rc" in
    2) say "exited with status 2 (bad configuration: flags, TF_CONFIG, job spec or checkpoint); not restarting, fix it and start again"
       exit "$rc" ;;
    126|127) say "exited with status $rc (the command cannot be run); not restarting"
       exit "$rc" ;;
  esac
  if [ "$restarts" -ge "$MAX_RESTARTS" ]; then
    say "exited with status $rc; not restarting (already restarted $restarts times, --max_restarts $MAX_RESTARTS)"
    exit "$rc"
  fi
  restarts=$((restarts + 1))
  say "exited with status $rc; restart $restarts of $MAX_RESTARTS in ${DELAY_SECS}s"
  sleep "$DELAY_SECS" &
  wait $! || true
  [ "$STOPPING" = 1 ] && { say "stopped by a signal before the restart"; exit "$rc"; }
done
