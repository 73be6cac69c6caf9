# Shared helpers for the integration tests: free loopback ports, TF_CONFIG per task, processes
# started in the background and always stopped (by PID) when the test exits.
# Usage: source lib.sh BIN_DIR   (sets BIN, WORK; installs the cleanup trap)
set -euo pipefail

BIN="$(cd "$1" && pwd)"
IT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/pstrain-it.XXXXXX")"
PIDS=()

SUPERVISED=()  # supervisors' PIDs (start_supervised): their tasks are stopped with them
cleanup() {
  local pid
  for pid in "${SUPERVISED[@]}"; do
    for kid in $(pgrep -P "$pid" 2>/dev/null); do kill -9 "$kid" 2>/dev/null || true; done
  done
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "${KEEP_WORK:-0}" = 1 ]; then echo "work dir kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  for f in "$WORK"/*.log; do
    [ -f "$f" ] || continue
    echo "---- $(basename "$f") (last 30 lines)" >&2
    tail -n 30 "$f" >&2
  done
  exit 1
}

# free_ports N: N distinct free TCP ports on 127.0.0.1 (held together while chosen).
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# make_cluster NUM_PS NUM_WORKERS: sets CLUSTER (JSON) and PS_PORTS/WORKER_PORTS/CHIEF_PORT.
make_cluster() {
  local nps=$1 nw=$2 ports i
  read -r -a ports <<<"$(free_ports $((nps + nw + 1)))"
  CHIEF_PORT=${ports[0]}
  PS_PORTS=("${ports[@]:1:nps}")
  WORKER_PORTS=("${ports[@]:$((1 + nps)):nw}")
  local ps_list="" w_list=""
  for i in "${PS_PORTS[@]}"; do ps_list+="${ps_list:+,}\"127.0.0.1:$i\""; done
  for i in "${WORKER_PORTS[@]}"; do w_list+="${w_list:+,}\"127.0.0.1:$i\""; done
  CLUSTER="{\"chief\":[\"127.0.0.1:$CHIEF_PORT\"],\"worker\":[$w_list],\"ps\":[$ps_list]}"
}

tf_config() {  # tf_config TYPE INDEX
  echo "{\"cluster\":$CLUSTER,\"task\":{\"type\":\"$1\",\"index\":$2}}"
}

# start TYPE INDEX BINARY [ARGS...]: starts a task in the background, log in $WORK/TYPE-INDEX.log;
# sets LAST_PID.
start() {
  local type=$1 index=$2 binary=$3
  shift 3
  TF_CONFIG="$(tf_config "$type" "$index")" "$BIN/$binary" "$@" >"$WORK/$type-$index.log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}

# start_supervised TYPE INDEX BINARY [ARGS...]: as start, under deploy/local/supervise.sh (a task
# that dies is started again a second later, as an orchestrator would); LAST_PID is the
# supervisor's and supervised_pid INDEX... gives the running task's.
start_supervised() {
  local type=$1 index=$2 binary=$3
  shift 3
  TF_CONFIG="$(tf_config "$type" "$index")" bash "$IT_DIR/../../deploy/local/supervise.sh" --name "$type:$index" \
    --delay_secs 1 -- "$BIN/$binary" "$@" >"$WORK/$type-$index.log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
  SUPERVISED+=("$LAST_PID")
}

# supervised_pid SUPERVISOR_PID: the PID of the task the supervisor runs now (waits up to 10 s).
supervised_pid() {
  local i kid
  for ((i = 0; i < 100; i++)); do
    kid=$(pgrep -P "$1" | head -n 1) && [ -n "$kid" ] && { echo "$kid"; return 0; }
    sleep 0.1
  done
  return 1
}

# start_servers NUM_PS NUM_WORKERS [WORKER_ARGS...]: every ps and worker of the cluster.
start_servers() {
  local nps=$1 nw=$2 i
  shift 2
  for ((i = 0; i < nps; i++)); do start ps "$i" pstrain-ps; done
  for ((i = 0; i < nw; i++)); do start worker "$i" pstrain-worker "$@"; WORKER_PIDS[$i]=$LAST_PID; done
}

# run_cluster_job NUM_PS NUM_WORKERS MODEL_DIR SECONDS [CHIEF_ARGS...]: a job on a fresh cluster
# (ps and workers with --threads=1): the chief with --model_dir=MODEL_DIR --wait_timeout_secs=30
# and CHIEF_ARGS (--job=... among them), log chief-0.log; fails unless it exits 0 within SECONDS,
# then waits for the done job's ps and workers to exit on the chief's word.
run_cluster_job() {
  local nps=$1 nw=$2 model=$3 secs=$4 before=${#PIDS[@]} i
  shift 4
  make_cluster "$nps" "$nw"
  start_servers "$nps" "$nw" --threads=1
  start chief 0 pstrain-chief --model_dir="$model" --wait_timeout_secs=30 "$@"
  wait_pid "$LAST_PID" "$secs"
  [ "$WAIT_RC" = 0 ] || fail "the chief ($*) exited $WAIT_RC: $(tail -n 5 "$WORK/chief-0.log")"
  for ((i = before; i < ${#PIDS[@]}; i++)); do wait_pid "${PIDS[$i]}" 30; done
  PIDS=("${PIDS[@]:0:before}")
}

# init_only_cluster NPS MODEL_DIR CHIEF_ARGS...: NPS ps (no worker is needed) and the chief with
# --init_only, which creates or restores the variables, checkpoints and stops; the ps are stopped
# afterwards (an initialized job's ps serve on).
init_only_cluster() {
  local nps=$1 model=$2 before=${#PIDS[@]} i
  shift 2
  make_cluster "$nps" 1
  for ((i = 0; i < nps; i++)); do start ps "$i" pstrain-ps; done
  start chief 0 pstrain-chief --model_dir="$model" --wait_timeout_secs=30 --init_only "$@"
  wait_pid "$LAST_PID" 60
  [ "$WAIT_RC" = 0 ] || fail "the --init_only chief ($*) exited $WAIT_RC: $(tail -n 5 "$WORK/chief-0.log")"
  for ((i = before; i < ${#PIDS[@]}; i++)); do kill -9 "${PIDS[$i]}" 2>/dev/null || true; wait "${PIDS[$i]}" 2>/dev/null || true; done
  PIDS=("${PIDS[@]:0:before}")
}

# evaluate_checkpoint CHECKPOINT OUT_JSON: `pstrain evaluate --format=json` of a checkpoint (or a
# model dir's newest) into OUT_JSON; fails with its log when it fails.
evaluate_checkpoint() {
  "$BIN/pstrain" evaluate --checkpoint="$1" --format=json >"$2" 2>"$WORK/evaluate.log" \
    || fail "pstrain evaluate --checkpoint=$1 failed: $(cat "$WORK/evaluate.log")"
}

# inspect_latest MODEL_DIR OUT_JSON: `pstrain inspect --format=json` of the model dir's newest
# checkpoint; fails with its log when it fails.
inspect_latest() {
  local ckpt
  ckpt=$(ls -d "$1"/ckpt-* | grep -E '/ckpt-[0-9]+$' | sort -t- -k2 -n | tail -n 1)
  [ -n "$ckpt" ] || fail "no checkpoint in $1"
  "$BIN/pstrain" inspect --checkpoint="$ckpt" --format=json >"$2" 2>"$WORK/inspect.log" ||
    fail "pstrain inspect --checkpoint=$ckpt failed: $(cat "$WORK/inspect.log")"
}

# export_checkpoint CHECKPOINT FORMAT OUT: `pstrain export` of a checkpoint (or a model dir's
# newest); fails with its log when it fails.
export_checkpoint() {
  "$BIN/pstrain" export --checkpoint="$1" --format="$2" --out="$3" >"$WORK/export.log" 2>&1 \
    || fail "pstrain export --checkpoint=$1 --format=$2 failed: $(cat "$WORK/export.log")"
}

# wait_pid PID SECONDS: waits for the process to exit (its status in WAIT_RC); fails on timeout.
wait_pid() {
  local pid=$1 secs=$2 i
  for ((i = 0; i < secs * 10; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      WAIT_RC=0
      wait "$pid" || WAIT_RC=$?
      return 0
    fi
    sleep 0.1
  done
  fail "process $pid still running after ${secs}s"
}

# wait_for_line FILE PATTERN SECONDS: waits until FILE has a line matching the grep -E pattern.
wait_for_line() {
  local file=$1 pattern=$2 secs=$3 i
  for ((i = 0; i < secs * 10; i++)); do
    grep -Eq "$pattern" "$file" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "no line matching '$pattern' in $(basename "$file") after ${secs}s"
}

# json_get FILE EXPR: evaluates a Python expression over the JSON document `d` in FILE.
json_get() {
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# expect_exit CODE NAME PATTERN COMMAND...: runs COMMAND (output in $WORK/NAME.log) and fails unless
# it exits CODE with output matching the grep -E PATTERN and without a crash or sanitizer report.
# Counts the cases in CASES.
CASES=0
expect_exit() {
  local code=$1 name=$2 pattern=$3 rc=0
  shift 3
  "$@" >"$WORK/$name.log" 2>&1 || rc=$?
  if grep -Eq "Sanitizer|runtime error:|terminate called|Segmentation fault|core dumped" "$WORK/$name.log"; then
    fail "$name crashed (exit $rc): $(head -c 3000 "$WORK/$name.log")"
  fi
  [ "$rc" = "$code" ] || fail "$name: exit status $rc, expected $code: $(head -c 3000 "$WORK/$name.log")"
  grep -Eq -- "$pattern" "$WORK/$name.log" || fail "$name: output does not match '$pattern': $(head -c 3000 "$WORK/$name.log")"
  CASES=$((CASES + 1))
}

# save_pristine DIR, then restore_pristine: DIR (a model dir) kept aside, and put back as it was.
save_pristine() { PRISTINE_OF=$1; rm -rf "$WORK/pristine"; cp -a "$1" "$WORK/pristine"; }
restore_pristine() { rm -rf "$PRISTINE_OF"; cp -a "$WORK/pristine" "$PRISTINE_OF"; }

# write_job FILE JSON: a job spec file.
write_job() { printf '%s\n' "$2" >"$1"; }

# nested N: N nested JSON arrays.
nested() { python3 -c "import sys; n=int(sys.argv[1]); print('['*n + ']'*n)" "$1"; }

# train_linear MODEL_DIR STEPS [CHIEF_ARGS...]: a linear job on a fresh 1 ps + 1 worker cluster
# (stopped afterwards), checkpointing every 20 steps; its exit status in TRAIN_RC, log chief-0.log.
train_linear() {
  local model=$1 steps=$2 pids_before=${#PIDS[@]} i
  shift 2
  make_cluster 1 1
  start_servers 1 1 --threads=1
  TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job=linear --steps="$steps" --checkpoint_every_steps=20 \
    --model_dir="$model" --wait_timeout_secs=30 --progress_secs=1 "$@" >"$WORK/chief-0.log" 2>&1 && TRAIN_RC=0 || TRAIN_RC=$?
  for ((i = pids_before; i < ${#PIDS[@]}; i++)); do kill -9 "${PIDS[$i]}" 2>/dev/null || true; wait "${PIDS[$i]}" 2>/dev/null || true; done
}
