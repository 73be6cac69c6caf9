#!/usr/bin/env bash
# kill -9 a worker mid-training: the job still completes every step, names the lost worker, and
# uses the worker again once it is back with the same TF_CONFIG.
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 1 2
declare -a WORKER_PIDS
start_servers 1 2
MODEL="$WORK/model"
STEPS=${STEPS:-4000}
start chief 0 pstrain-chief --job=linear --steps="$STEPS" --steps_per_closure=5 --model_dir="$MODEL" \
  --progress_secs=1 --poll_secs=1 --wait_timeout_secs=30
CHIEF=$LAST_PID
wait_for_line "$WORK/chief-0.log" "step [1-9][0-9]*/" 60
kill -9 "${WORKER_PIDS[1]}"
wait_for_line "$WORK/chief-0.log" "lost worker:1" 60
start worker 1 pstrain-worker   # the same TF_CONFIG: it comes back
wait_pid "$CHIEF" 300
[ "$WAIT_RC" = 0 ] || fail "chief exited with $WAIT_RC"
[ "$(json_get "$MODEL/summary.json" "d['global_step']")" = "$STEPS" ] || fail "the job did not complete every step"
json_get "$MODEL/summary.json" "'worker:1' in ' '.join(d['lost_workers'])" | grep -q True \
  || fail "summary does not name worker:1 as lost"
if ! grep -q "worker:1 at .* is back" "$WORK/chief-0.log"; then
  echo "note: the job ended before worker:1 came back" >&2
fi
echo "PASS: $STEPS steps completed after losing worker:1"
