#!/usr/bin/env bash
# Sync mode: kill -9 a ps mid-training, restarted by deploy/local/supervise.sh: every ps rolls back
# to the newest checkpoint (a sync model stays one consistent global step), the step counter
# follows, and the job completes every step.
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 2 2
for i in 0 1; do start_supervised ps "$i" pstrain-ps; SUP[$i]=$LAST_PID; done
for i in 0 1; do start worker "$i" pstrain-worker --threads=1; done
STEPS=1500
start chief 0 pstrain-chief --job=linear --mode=sync --steps="$STEPS" --steps_per_closure=5 \
  --checkpoint_every_steps=200 --model_dir="$WORK/model" --progress_secs=1 --wait_timeout_secs=30
CHIEF=$LAST_PID
wait_for_line "$WORK/chief-0.log" "saved checkpoint .*/ckpt-200" 120
wait_for_line "$WORK/chief-0.log" "step (2[5-9][0-9]|[3-9][0-9][0-9])/" 120
PS1_PID=$(supervised_pid "${SUP[1]}") || fail "no pstrain-ps under the supervisor of ps:1"
kill -9 "$PS1_PID"
wait_for_line "$WORK/ps-1.log" "restart 1 of" 30
wait_pid "$CHIEF" 240
[ "$WAIT_RC" = 0 ] || fail "the chief exited with $WAIT_RC after ps:1 was killed and restarted (sync)"
rolled=$(grep -E "all ps rolled back to .*/ckpt-[0-9]+: training goes on from step [0-9]+" "$WORK/chief-0.log") \
  || fail "the chief did not say every ps rolled back to a checkpoint"
back=$(grep -E "ps:1 is back at step" "$WORK/chief-0.log") || fail "the chief did not report ps:1 back"
[ "$(json_get "$WORK/model/summary.json" "d['global_step']")" = "$STEPS" ] || fail "the job did not complete every step"
echo "$rolled"
echo "$back"
echo "PASS: sync mode: ps:1 killed and restarted, every ps rolled back, $STEPS steps done"
