#!/usr/bin/env bash
# One owner per model dir: a second chief started on the model dir of a running one is refused
# (exit 2) naming the owner (pid, host), before it touches the cluster or the checkpoints; the lock
# goes with its process (a chief killed with SIGKILL leaves no stale lock). Two evaluators on one
# model dir: the second is refused the same way.
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 1 1
start_servers 1 1 --threads=1
MODEL="$WORK/model"
ARGS=(--job=linear --steps=200000 --steps_per_closure=5 --model_dir="$MODEL" --progress_secs=1 --wait_timeout_secs=30)
start chief 0 pstrain-chief "${ARGS[@]}"
FIRST=$LAST_PID
wait_for_line "$WORK/chief-0.log" "step [1-9][0-9]*/" 60

# The second chief has its own status port: only the model dir is shared.
expect_exit 2 second-chief "model dir $MODEL is in use by another process.*pstrain-chief, task chief:0, pid $FIRST on host" \
  env TF_CONFIG="$(tf_config chief 0)" timeout 60 "$BIN/pstrain-chief" "${ARGS[@]}" --listen=127.0.0.1:0
grep -q "another --model_dir" "$WORK/second-chief.log" || fail "the refusal does not say how to get out"
kill -0 "$FIRST" || fail "the first chief died when the second was refused"
! grep -q "resumed from" "$WORK/second-chief.log" || fail "the second chief resumed the first's checkpoint"

# SIGKILL: no chance to clean up, yet the next chief is not refused.
kill -9 "$FIRST"
wait_pid "$FIRST" 30
expect_exit 0 after-kill "" env TF_CONFIG="$(tf_config chief 0)" timeout 120 "$BIN/pstrain-chief" "${ARGS[@]}" --init_only
! grep -q "in use by another process" "$WORK/after-kill.log" || fail "a killed chief's lock outlived it"

# Evaluators: one per model dir (an empty one: the evaluator waits there for checkpoints).
EVAL_DIR="$WORK/eval-model"
EVAL_CONFIG="{\"cluster\":$CLUSTER,\"task\":{\"type\":\"evaluator\",\"index\":0}}"
TF_CONFIG="$EVAL_CONFIG" "$BIN/pstrain-chief" --job=linear --model_dir="$EVAL_DIR" --eval_poll_secs=1 >"$WORK/evaluator-0.log" 2>&1 &
EVAL=$!
PIDS+=("$EVAL")
wait_for_line "$WORK/evaluator-0.log" "watching" 60
expect_exit 2 second-evaluator "model dir $EVAL_DIR is in use by another process.*task evaluator:0, pid $EVAL" \
  env TF_CONFIG="$EVAL_CONFIG" timeout 60 "$BIN/pstrain-chief" --job=linear --model_dir="$EVAL_DIR" --eval_poll_secs=1
kill -TERM "$EVAL"
wait_pid "$EVAL" 30
[ "$WAIT_RC" = 143 ] || fail "the evaluator exited $WAIT_RC after SIGTERM, expected 143"
echo "PASS: a second chief (and a second evaluator) on one model dir is refused with exit 2 naming the owner; a killed owner's lock goes with it ($CASES cases)"
