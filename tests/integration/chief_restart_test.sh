#!/usr/bin/env bash
# kill -9 the chief mid-training and start it again: it resumes from the newest checkpoint's step
# and each data part's position saved with it, and completes the job. From the workers' closure
# lines (data part, batches, examples per epoch), no example of an epoch is trained twice or
# skipped across the restart (data_order_check.py).
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 2 2
start_servers 2 2
MODEL="$WORK/model"
STEPS=${STEPS:-4000}
ARGS=(--job=linear --steps="$STEPS" --steps_per_closure=5 --checkpoint_every_steps=200 --model_dir="$MODEL"
      --progress_secs=1 --wait_timeout_secs=30)
start chief 0 pstrain-chief "${ARGS[@]}"
wait_for_line "$WORK/chief-0.log" "saved checkpoint .*ckpt-[1-9]" 120
kill -9 "$LAST_PID"
wait "$LAST_PID" 2>/dev/null || true
declare -a LINES_AT_KILL
for i in 0 1; do LINES_AT_KILL[$i]=$(wc -l <"$WORK/worker-$i.log"); done
mv "$WORK/chief-0.log" "$WORK/chief-0-first.log"
newest=$(ls "$MODEL" | sed -n 's/^ckpt-\([0-9]*\)$/\1/p' | sort -n | tail -1)
[ -n "$newest" ] || fail "no checkpoint before the kill"
cp "$MODEL/ckpt-$newest/data_positions.json" "$WORK/resumed_positions.json" || fail "ckpt-$newest has no data positions"

start chief 0 pstrain-chief "${ARGS[@]}"
restarted_at=$(date +%s.%N)
wait_for_line "$WORK/chief-0.log" "configured 2 workers" 60
training_at=$(date +%s.%N)
wait_pid "$LAST_PID" 300
[ "$WAIT_RC" = 0 ] || fail "restarted chief exited with $WAIT_RC"
grep -q "resumed from $MODEL/ckpt-$newest at step $newest" "$WORK/chief-0.log" \
  || fail "the restarted chief did not resume from ckpt-$newest"
[ "$(json_get "$MODEL/summary.json" "d['start_step']")" = "$newest" ] || fail "summary start_step is not $newest"
[ "$(json_get "$MODEL/summary.json" "d['global_step']")" = "$STEPS" ] || fail "the resumed job did not finish"
grep -q "resumed data positions (batches per part) .* from $MODEL/ckpt-$newest" "$WORK/chief-0.log" \
  || fail "the restarted chief did not resume the data positions of ckpt-$newest"
# Where each worker's log turns to the restarted chief: its first "configured" line after the kill.
: >"$WORK/split"
for i in 0 1; do
  at=$(awk -v from="${LINES_AT_KILL[$i]}" 'NR > from && /configured as worker/ { print NR; exit }' "$WORK/worker-$i.log")
  [ -n "$at" ] || fail "worker $i was not configured by the restarted chief"
  echo "$WORK/worker-$i.log $at" >>"$WORK/split"
done
order=$(python3 "$(dirname "$0")/data_order_check.py" "$WORK/resumed_positions.json" \
  "$MODEL/ckpt-$STEPS/data_positions.json" "$WORK/split" "$WORK/worker-0.log" "$WORK/worker-1.log" 2>&1) \
  || fail "$order"
echo "$order"
echo "restarted chief training again $(python3 -c "print(round($training_at - $restarted_at, 2))") s after its start" \
  "(this test's polling, 0.1 s)"
echo "PASS: resumed at step $newest and finished $STEPS steps"
