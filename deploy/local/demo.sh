#!/usr/bin/env bash
# The local multi-process demo: builds pstrain, starts N ps, M workers and the chief as separate
# processes on free 127.0.0.1 ports (each with its own TF_CONFIG), shows the chief's progress,
# and ends with the final test accuracy (CTR jobs: test AUC, beside the Bayes-optimal AUC of the
# default synthetic set) and where the checkpoint and metrics went. Every process it started is
# stopped on exit, Ctrl-C or any failure.
#
#   deploy/local/demo.sh [--workers 2] [--ps 2] [--job cnn|ctr|...] [--epochs 1] [--steps N]
#                        [--mode async|sync] [--worker_threads 1] [--train_files F --test_files F]
#                        [--tls] [--supervise] [--run_dir DIR] [--no-build] [-- extra chief flags]
# (--flag=value works too.) Every task serves Prometheus metrics on a port of its own (listed at
# the start and in RUN_DIR/prometheus-targets.json); the chief writes TensorBoard event files to
# RUN_DIR/model/{train,eval}; at the end the curves are drawn to RUN_DIR/curves.svg. With --tls
# every connection is mutual TLS: `pstrain certs` makes the cluster's CA and certificates into
# RUN_DIR/tls and every task runs with --tls_dir. With --supervise every ps and worker runs under
# deploy/local/supervise.sh, which starts a task that died again (kill one to watch the chief
# take it back; restarts are logged in the task's log).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)

WORKERS=2 PS=2 JOB=cnn EPOCHS=1 STEPS="" MODE="" BUILD=1 RUN_DIR="" WORKER_THREADS=1 TRAIN_FILES="" TEST_FILES=""
TLS=0 SUPERVISE=0
EXTRA=()
usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }
# shellcheck source=deploy/args.sh
source deploy/args.sh
args_normalize "no-build tls supervise help" "$@"
set -- "${ARGS[@]}"
while [ $# -gt 0 ]; do
  case "$1" in
    --workers) WORKERS=$2; shift 2 ;;
    --ps) PS=$2; shift 2 ;;
    --job) JOB=$2; shift 2 ;;
    --epochs) EPOCHS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --mode) MODE=$2; shift 2 ;;
    --worker_threads) WORKER_THREADS=$2; shift 2 ;;
    --train_files) TRAIN_FILES=$2; shift 2 ;;
    --test_files) TEST_FILES=$2; shift 2 ;;
    --run_dir) RUN_DIR=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --tls) TLS=1; shift ;;
    --supervise) SUPERVISE=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "demo: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
for n in "$WORKERS" "$PS" "$EPOCHS"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "demo: --workers, --ps and --epochs need positive integers" >&2; exit 2; }
done

# Reads the build's output: keeps it in a log and says every 5 s how many of ninja's steps are done.
show_build_progress() {
  local log=$1 line step="" last=$SECONDS
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$log"
    [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]] && step="${BASH_REMATCH[1]} of ${BASH_REMATCH[2]}"
    if [ -n "$step" ] && ((SECONDS - last >= 5)); then
      echo "demo: building: $step steps done" >&2
      last=$SECONDS
    fi
  done
  [ -z "$step" ] || echo "demo: building: $step steps done" >&2
}

if [ "$BUILD" = 1 ]; then
  mkdir -p build
  BUILD_LOG=$ROOT/build/demo-build.log
  : >"$BUILD_LOG"
  echo "demo: building (deploy/build.sh; the first time installs Debian packages and compiles for a few minutes; log: $BUILD_LOG)" >&2
  if ! bash deploy/build.sh 2>&1 | show_build_progress "$BUILD_LOG"; then
    tail -n 30 "$BUILD_LOG" >&2
    echo "demo: the build failed; the whole log is $BUILD_LOG" >&2
    exit 1
  fi
fi
BIN="$ROOT/build/bin"
RUN_DIR=${RUN_DIR:-"$ROOT/runs/$(date +%Y%m%d-%H%M%S)-$JOB"}
mkdir -p "$RUN_DIR/logs"
MODEL_DIR="$RUN_DIR/model"

PIDS=()
CHIEF_PID=""
stop_all() {
  local pid
  trap - EXIT INT TERM
  if [ -n "$CHIEF_PID" ] && kill -0 "$CHIEF_PID" 2>/dev/null; then
    kill -TERM "$CHIEF_PID" 2>/dev/null || true   # the chief checkpoints, then stops
    for _ in $(seq 1 100); do kill -0 "$CHIEF_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$CHIEF_PID" 2>/dev/null || true
  fi
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
trap 'stop_all' EXIT
trap 'echo; echo "demo: interrupted; stopping every process it started" >&2; stop_all; exit 130' INT TERM

read -r -a PORTS <<<"$(python3 - $((2 * (PS + WORKERS + 1))) <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
)"
list() { local out="" p; for p in "$@"; do out+="${out:+,}\"127.0.0.1:$p\""; done; echo "$out"; }
CLUSTER="{\"chief\":[\"127.0.0.1:${PORTS[0]}\"],\"ps\":[$(list "${PORTS[@]:1:PS}")],\"worker\":[$(list "${PORTS[@]:$((1 + PS)):WORKERS}")]}"
echo "$CLUSTER" >"$RUN_DIR/cluster.json"
TLS_ARGS=()
if [ "$TLS" = 1 ]; then
  "$BIN/pstrain" certs --out="$RUN_DIR/tls" --cluster="$RUN_DIR/cluster.json" >/dev/null
  TLS_ARGS=(--tls_dir="$RUN_DIR/tls")
  echo "demo: mutual TLS between every task (certificates in $RUN_DIR/tls, made by pstrain certs)" >&2
fi
# Metrics ports: the chief's, then the ps', then the workers' (the second half of PORTS).
METRICS_PORTS=("${PORTS[@]:$((PS + WORKERS + 1))}")
metrics_port() {  # metrics_port TYPE INDEX
  case $1 in
    chief) echo "${METRICS_PORTS[0]}" ;;
    ps) echo "${METRICS_PORTS[$((1 + $2))]}" ;;
    worker) echo "${METRICS_PORTS[$((1 + PS + $2))]}" ;;
  esac
}
{  # Prometheus's file_sd format: point a file_sd_configs entry at this file to scrape the run.
  printf '['
  sep=""
  for task in chief:0 $(seq -f 'ps:%g' 0 $((PS - 1))) $(seq -f 'worker:%g' 0 $((WORKERS - 1))); do
    printf '%s{"targets": ["127.0.0.1:%s"], "labels": {"task": "%s"}}' "$sep" "$(metrics_port "${task%:*}" "${task#*:}")" "$task"
    sep=", "
  done
  printf ']\n'
} >"$RUN_DIR/prometheus-targets.json"

start_task() {  # start_task TYPE INDEX BINARY ARGS...
  local type=$1 index=$2 binary=$3
  shift 3
  # A session of its own: Ctrl-C reaches only this script and the chief, which checkpoints while
  # the ps are still up; this script then stops the ps and workers.
  local supervisor=()
  [ "$SUPERVISE" = 1 ] && supervisor=(bash "$ROOT/deploy/local/supervise.sh" --name "$type:$index" --)
  TF_CONFIG="{\"cluster\":$CLUSTER,\"task\":{\"type\":\"$type\",\"index\":$index}}" \
    setsid "${supervisor[@]}" "$BIN/$binary" --metrics_port="$(metrics_port "$type" "$index")" "${TLS_ARGS[@]}" "$@" \
    >"$RUN_DIR/logs/$type-$index.log" 2>&1 &
  PIDS+=("$!")
}
for ((i = 0; i < PS; i++)); do start_task ps "$i" pstrain-ps --checkpoint_root="$MODEL_DIR"; done
for ((i = 0; i < WORKERS; i++)); do start_task worker "$i" pstrain-worker --threads="$WORKER_THREADS"; done
echo "demo: started $PS ps and $WORKERS workers; logs in $RUN_DIR/logs/ (one file per task)" >&2
[ "$SUPERVISE" = 1 ] && echo "demo: every ps and worker runs under deploy/local/supervise.sh: a task that dies is started again" >&2
echo "demo: Prometheus metrics at http://127.0.0.1:PORT/metrics, chief ${METRICS_PORTS[0]}, ps ${METRICS_PORTS[*]:1:PS}, workers ${METRICS_PORTS[*]:$((1 + PS))} (targets: $RUN_DIR/prometheus-targets.json)" >&2

# An epoch of the ctr preset takes seconds, not minutes: report every second to draw a curve.
PROGRESS_SECS=5
[ "$JOB" = ctr ] && PROGRESS_SECS=1
CHIEF_ARGS=(--job="$JOB" --model_dir="$MODEL_DIR" --progress_secs="$PROGRESS_SECS" --metrics_port="$(metrics_port chief 0)"
            "${TLS_ARGS[@]}")
if [ -n "$STEPS" ]; then CHIEF_ARGS+=(--steps="$STEPS"); else CHIEF_ARGS+=(--epochs="$EPOCHS"); fi
[ -n "$MODE" ] && CHIEF_ARGS+=(--mode="$MODE")
[ -n "$TRAIN_FILES" ] && CHIEF_ARGS+=(--train_files="$TRAIN_FILES")
[ -n "$TEST_FILES" ] && CHIEF_ARGS+=(--test_files="$TEST_FILES")
CHIEF_ARGS+=("${EXTRA[@]}")
TF_CONFIG="{\"cluster\":$CLUSTER,\"task\":{\"type\":\"chief\",\"index\":0}}" \
  "$BIN/pstrain-chief" "${CHIEF_ARGS[@]}" >"$RUN_DIR/summary.json" 2> >(tee "$RUN_DIR/logs/chief-0.log" >&2) &
CHIEF_PID=$!
rc=0
wait "$CHIEF_PID" || rc=$?
CHIEF_PID=""
sleep 0.2  # let tee flush the chief's last lines
if [ "$rc" = 143 ]; then
  echo "demo: stopped; the checkpoint is in $MODEL_DIR; to resume, run this again with --run_dir $RUN_DIR" >&2
  exit 130
elif [ "$rc" != 0 ]; then
  echo "demo: the chief exited with status $rc; see $RUN_DIR/logs/" >&2
  exit "$rc"
fi
# The chief told every ps and worker that the job is done: they exit 0 on their own (the EXIT
# trap stops any still running after 15 s).
left=""
for pid in "${PIDS[@]}"; do
  for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then left+=" $pid (still running)"; continue; fi
  task_rc=0
  wait "$pid" || task_rc=$?
  [ "$task_rc" = 0 ] || left+=" $pid (exit $task_rc)"
done
if [ -n "$left" ]; then
  echo "demo: not every ps and worker ended cleanly:$left; see $RUN_DIR/logs/" >&2
else
  echo "demo: every ps and worker exited 0 once the job was done" >&2
fi
python3 - "$RUN_DIR/summary.json" "$RUN_DIR" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
acc = d.get("final_test_accuracy")
run = "%d steps, %.0f examples/s, %.0f s" % (d["global_step"], d["examples_per_second"], d["seconds"])
print()
if d.get("final_test_auc") is not None:
    bayes = d.get("bayes_test_auc")
    print("final test AUC: %.4f%s   (log loss %.4f, %s)" % (
        d["final_test_auc"], "   (Bayes-optimal on this set: %.4f)" % bayes if bayes is not None else "",
        d["final_test_logloss"], run))
else:
    print("final test accuracy: %s   (test loss %s, %s)" % (
        "%.2f%%" % (100 * acc) if acc is not None else "n/a",
        "%.4f" % d["final_test_loss"] if d.get("final_test_loss") is not None else "n/a", run))
print("checkpoint:   %s" % d["checkpoint"])
print("metrics:      %s" % d["metrics_file"])
print("summary:      %s" % sys.argv[1])
print("logs:         %s/logs/" % sys.argv[2])
print("tensorboard:  tensorboard --logdir %s/model   (event files in model/train and model/eval)" % sys.argv[2])
PY
if "$BIN/pstrain" plot "$RUN_DIR" --out="$RUN_DIR/curves.svg" 2>/dev/null; then
  echo "curves:       $RUN_DIR/curves.svg"
fi
echo "compare runs: $BIN/pstrain plot $RUN_DIR [OTHER_RUN_DIR...] --out=curves.png"
