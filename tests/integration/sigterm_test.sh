#!/usr/bin/env bash
# SIGTERM to the chief mid-training: it lets running closures finish, saves a checkpoint, writes
# a summary with state "stopped" and exits 143 (128 + SIGTERM, what orchestrators retry); the
# next start resumes from that checkpoint. SIGTERM also ends every wait within seconds, exit 143:
# the chief waiting for a cluster that is not up, the chief waiting for a lost ps to come back
# (both bounded by 120 s timeouts here, far beyond the bound the test waits), and a ps and a
# worker serving.
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 1 2
# --keep_serving: the same tasks serve the three chiefs below (a job done would end them).
start ps 0 pstrain-ps --keep_serving
for i in 0 1; do start worker "$i" pstrain-worker --threads=1 --keep_serving; WORKER_PIDS[$i]=$LAST_PID; done
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

# The chief waiting for a lost ps: SIGTERM ends the wait (was: up to --ps_recovery_timeout_secs).
LAST_STEP=$step
mv "$WORK/chief-0.log" "$WORK/chief-0-second.log"
start chief 0 pstrain-chief "${ARGS[@]}" --ps_recovery_timeout_secs=120 --wait_timeout_secs=120
CHIEF=$LAST_PID
wait_for_line "$WORK/chief-0.log" "step [1-9][0-9]*/" 60
PS0=${PIDS[0]}
kill -9 "$PS0"
wait_pid "$PS0" 10
wait_for_line "$WORK/chief-0.log" "lost ps:0" 60
kill -TERM "$CHIEF"
wait_pid "$CHIEF" 20
[ "$WAIT_RC" = 143 ] || fail "chief waiting for a lost ps exited with $WAIT_RC after SIGTERM, expected 143"
grep -q "stopped by a signal: .*waiting for the lost ps:0" "$WORK/chief-0.log" || fail "the chief did not say which wait SIGTERM ended"

# The chief waiting for a cluster that never comes up (the ps is gone): SIGTERM ends the wait.
mv "$WORK/chief-0.log" "$WORK/chief-0-third.log"
start chief 0 pstrain-chief "${ARGS[@]}" --wait_timeout_secs=120
CHIEF=$LAST_PID
wait_for_line "$WORK/chief-0.log" "waiting for 1 ps" 60
kill -TERM "$CHIEF"
wait_pid "$CHIEF" 20
[ "$WAIT_RC" = 143 ] || fail "chief waiting for the cluster exited with $WAIT_RC after SIGTERM, expected 143"
grep -q "stopped while waiting for the cluster" "$WORK/chief-0.log" || fail "the chief did not say which wait SIGTERM ended"
[ -f "$MODEL/ckpt-$LAST_STEP/index.json" ] || fail "the stops in a wait lost ckpt-$LAST_STEP"

# A worker and a ps stop on SIGTERM with 143, as the chief (an orchestrator's stop, not a failure).
for w in "${WORKER_PIDS[@]}"; do
  kill -TERM "$w"
  wait_pid "$w" 20
  [ "$WAIT_RC" = 143 ] || fail "a worker exited with $WAIT_RC after SIGTERM, expected 143"
done
start ps 0 pstrain-ps
PS0=$LAST_PID
wait_for_line "$WORK/ps-0.log" "serving on" 30
kill -TERM "$PS0"
wait_pid "$PS0" 20
[ "$WAIT_RC" = 143 ] || fail "a ps exited with $WAIT_RC after SIGTERM, expected 143"
echo "PASS: SIGTERM saved ckpt-$step, exit 143; the restart resumed there; SIGTERM ends the waits for a lost ps and for the cluster (exit 143); a ps and a worker exit 143"
