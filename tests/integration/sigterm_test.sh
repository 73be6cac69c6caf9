#!/usr/bin/env bash
# SIGTERM to the chief mid-training: it lets running closures finish, saves a checkpoint, writes
# a summary with state "stopped" and exits 143 (128 + SIGTERM, what orchestrators retry); the
# next start resumes from that checkpoint.
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 1 2
start_servers 1 2 --threads=1
MODEL="$WORK/model"
ARGS=(--job=linear --steps=200000 --steps_per_closure=5 --model_dir="$MODEL" --progress_secs=1 --wait_timeout_secs=30)
start chief 0 pstrain-chief "${ARGS[@]}"
CHIEF=$LAST_PID
wait_for_line "$WORK/chief-0.log" "step [1-9][0-9]*/" 60
kill -TERM "$CHIEF"
wait_pid "$CHIEF" 60
[ "$WAIT_RC" = 143 ] || fail "chief exited with $WAIT_RC after SIGTERM, expected 143"
[ "$(json_get "$MODEL/summary.json" "d['state']")" = stopped ] || fail "summary state is not 'stopped'"
step=$(json_get "$MODEL/summary.json" "d['global_step']")
[ -f "$MODEL/ckpt-$step/index.json" ] || fail "no checkpoint ckpt-$step after SIGTERM"
grep -q "SIGTERM" "$WORK/chief-0.log" || fail "the chief did not say it got SIGTERM"

mv "$WORK/chief-0.log" "$WORK/chief-0-first.log"
start chief 0 pstrain-chief "${ARGS[@]}" --steps=$((step + 100))
wait_pid "$LAST_PID" 120
[ "$WAIT_RC" = 0 ] || fail "restarted chief exited with $WAIT_RC"
grep -q "resumed from $MODEL/ckpt-$step at step $step" "$WORK/chief-0.log" || fail "did not resume from ckpt-$step"
echo "PASS: SIGTERM saved ckpt-$step, exit 143; the restart resumed there"
