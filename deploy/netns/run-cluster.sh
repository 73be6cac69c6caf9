#!/usr/bin/env bash
# Runs a pstrain cluster as if on five machines: chief, worker0, worker1, ps0 and ps1 are network
# namespaces joined by a bridge (deploy/netns/netns.sh), one process each, TF_CONFIG naming the
# hosts by name. Optionally cuts one worker off the network for a while during training.
#
#   deploy/netns/run-cluster.sh [--bin-dir DIR] [--steps N] [--job J] [--logs DIR]
#                               [--cut worker1 --cut-when REGEX --cut-seconds S] [--timeout S]
#                               [--worker-threads N]
#                               [-- EXTRA CHIEF FLAGS...]      (every flag also as --flag=value)
#
#   --bin-dir DIR    where pstrain-chief/-worker/-ps are (default build/bin)
#   --steps N        training steps (default 100); --job J: preset or JSON file (default cnn)
#   --logs DIR       one log per host, DIR/<host>.log (default build/netns-logs)
#   --cut HOST       cut HOST off (nft drop in its namespace) once the chief's log matches
#                    --cut-when (default: a progress line naming a step), for --cut-seconds (default
#                    10), then reconnect it
#   --timeout S      give up on the chief after S seconds (default 600)
#   --worker-threads N   each worker's --threads (default 1: five processes share this machine)
# Exit status: the chief's (0 done, 2 bad configuration, 1 failure), 124 on timeout. Needs root, ip
# and nft. Everything it starts is stopped, and the namespaces removed, when it exits.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=deploy/netns/netns.sh
source deploy/netns/netns.sh

BIN_DIR=build/bin
STEPS=100
JOB=cnn
LOGS=build/netns-logs
CUT=""
CUT_WHEN='[Ss]tep[ =:]*[0-9]'
CUT_SECONDS=10
TIMEOUT=600
WORKER_THREADS=1
PORT=2222
CHIEF_FLAGS=()
# shellcheck source=deploy/args.sh
source deploy/args.sh
args_normalize "help" "$@"
set -- "${ARGS[@]}"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --job) JOB=$2; shift 2 ;;
    --logs) LOGS=$2; shift 2 ;;
    --cut) CUT=$2; shift 2 ;;
    --cut-when) CUT_WHEN=$2; shift 2 ;;
    --cut-seconds) CUT_SECONDS=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --worker-threads) WORKER_THREADS=$2; shift 2 ;;
    --) shift; CHIEF_FLAGS=("$@"); break ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-cluster: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
log() { echo "run-cluster: $(date +%T) $*" >&2; }
if why=$(netns_missing); then log "$why"; exit 2; fi
BIN_DIR=$(realpath "$BIN_DIR")
for bin in pstrain-chief pstrain-worker pstrain-ps; do
  [ -x "$BIN_DIR/$bin" ] || { log "$BIN_DIR/$bin is missing: bash deploy/build.sh"; exit 2; }
done
mkdir -p "$LOGS"
LOGS=$(realpath "$LOGS")
MODEL_DIR=$(mktemp -d)
trap 'netns_down; rm -rf "$MODEL_DIR"' EXIT
trap 'exit 130' INT TERM

HOSTS=(chief worker0 worker1 ps0 ps1)
CLUSTER="{\"chief\": [\"chief:$PORT\"], \"worker\": [\"worker0:$PORT\", \"worker1:$PORT\"], \"ps\": [\"ps0:$PORT\", \"ps1:$PORT\"]}"
tf_config() { echo "{\"cluster\": $CLUSTER, \"task\": {\"type\": \"$1\", \"index\": $2}}"; }

netns_up "pstrain$$" "${HOSTS[@]}"
log "hosts up: ${HOSTS[*]} (namespaces pstrain$$-*); logs in $LOGS/<host>.log"
for i in 0 1; do
  netns_start "ps$i" "$LOGS/ps$i.log" env TF_CONFIG="$(tf_config ps $i)" "$BIN_DIR/pstrain-ps"
  netns_start "worker$i" "$LOGS/worker$i.log" env TF_CONFIG="$(tf_config worker $i)" \
    "$BIN_DIR/pstrain-worker" --threads="$WORKER_THREADS"
done
netns_start chief "$LOGS/chief.log" env TF_CONFIG="$(tf_config chief 0)" "$BIN_DIR/pstrain-chief" \
  --job="$JOB" --steps="$STEPS" --model_dir="$MODEL_DIR" "${CHIEF_FLAGS[@]}"
CHIEF=$NETNS_LAST_PID
START=$(date +%s)
log "chief started (job $JOB, $STEPS steps)"

chief_says() { grep -qE "$CUT_WHEN" "$LOGS/chief.log"; }
if [ -n "$CUT" ]; then
  if netns_wait_until "$TIMEOUT" chief_says; then
    netns_cut "$CUT"
    log "$CUT cut off the network for $CUT_SECONDS s"
    sleep "$CUT_SECONDS"
    netns_heal "$CUT"
    log "$CUT reconnected"
  else
    log "the chief's log never matched '$CUT_WHEN': no cut made"
  fi
fi

chief_done() { ! kill -0 "$CHIEF" 2>/dev/null; }
remaining=$((TIMEOUT - ($(date +%s) - START)))
if [ "$remaining" -le 0 ] || ! netns_wait_until "$remaining" chief_done; then
  log "the chief did not finish within $TIMEOUT s"
  exit 124
fi
status=0
wait "$CHIEF" || status=$?
log "chief exited with status $status after $(($(date +%s) - START)) s"
exit "$status"
