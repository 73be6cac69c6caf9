#!/usr/bin/env bash
# kill -9 a worker mid-training (async mode): the job still completes every step, names the lost
# worker, and uses the worker again once it is back with the same TF_CONFIG (asserted: the
# restarted worker logs closures it trained).
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 1 2
declare -a WORKER_PIDS
start_servers 1 2
MODEL="$WORK/model"
STEPS=${STEPS:-8000}
start chief 0 pstrain-chief --job=linear --steps="$STEPS" --steps_per_closure=5 --model_dir="$MODEL" \
  --progress_secs=1 --poll_secs=1 --wait_timeout_secs=30
CHIEF=$LAST_PID
wait_for_line "$WORK/worker-1.log" "closure [0-9]+: data part 1 batches [1-9][0-9]" 60
kill -9 "${WORKER_PIDS[1]}"
killed_at=$(date +%s.%N)
wait_for_line "$WORK/chief-0.log" "lost worker:1" 60
lost_at=$(date +%s.%N)
mv "$WORK/worker-1.log" "$WORK/worker-1-killed.log"
start worker 1 pstrain-worker   # the same TF_CONFIG: it comes back
started_at=$(date +%s.%N)
wait_for_line "$WORK/chief-0.log" "worker:1 at .* is back" 60
back_at=$(date +%s.%N)
wait_for_line "$WORK/worker-1.log" "closure [0-9]+: data part 1 batches" 60  # it trains again
kill -0 "$CHIEF" 2>/dev/null || fail "the job ended before the restarted worker:1 trained (raise STEPS)"
wait_pid "$CHIEF" 300
[ "$WAIT_RC" = 0 ] || fail "chief exited with $WAIT_RC"
[ "$(json_get "$MODEL/summary.json" "d['global_step']")" = "$STEPS" ] || fail "the job did not complete every step"
json_get "$MODEL/summary.json" "'worker:1' in ' '.join(d['lost_workers'])" | grep -q True \
  || fail "summary does not name worker:1 as lost"
echo "worker:1 killed: lost after $(python3 -c "print(round($lost_at - $killed_at, 2))") s;" \
  "restarted, back after $(python3 -c "print(round($back_at - $started_at, 2))") s (this test's polling, 0.1 s)"
echo "PASS: $STEPS steps completed after losing worker:1, which came back and trained again"
