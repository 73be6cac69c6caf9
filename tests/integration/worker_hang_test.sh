#!/usr/bin/env bash
# A worker that is alive but silent (SIGSTOP) is lost after --worker_silence_timeout_secs: its
# closure is re-run on the other worker (sync mode: its data part of the round), the job goes on;
# after SIGCONT it answers again, is taken back and trains again; the job completes.
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 1 2
declare -a WORKER_PIDS
start_servers 1 2 --threads=1
MODEL="$WORK/model"
STEPS=${STEPS:-6000}
start chief 0 pstrain-chief --job=linear --mode=sync --steps="$STEPS" --steps_per_closure=5 --model_dir="$MODEL" \
  --progress_secs=1 --poll_secs=1 --wait_timeout_secs=30 --worker_silence_timeout_secs=2
CHIEF=$LAST_PID
wait_for_line "$WORK/worker-1.log" "closure [0-9]+: data part 1 batches [1-9][0-9]{2}" 120
kill -STOP "${WORKER_PIDS[1]}"
stopped_at=$(date +%s.%N)
wait_for_line "$WORK/chief-0.log" "lost worker:1 .*silent for" 60
lost_at=$(date +%s.%N)
wait_for_line "$WORK/worker-0.log" "data part 1 batches" 60  # worker 0 runs part 1 meanwhile
closures_before=$(grep -c "closure [0-9]*: data part" "$WORK/worker-1.log" || true)
kill -CONT "${WORKER_PIDS[1]}"
wait_for_line "$WORK/chief-0.log" "worker:1 at .* is back" 60
# It trains again: more closure lines than when it was stopped (bounded wait, no fixed sleep).
for ((i = 0; i < 600; i++)); do
  [ "$(grep -c "closure [0-9]*: data part" "$WORK/worker-1.log" || true)" -gt "$((closures_before + 1))" ] && break
  kill -0 "$CHIEF" 2>/dev/null || break
  sleep 0.1
done
[ "$(grep -c "closure [0-9]*: data part" "$WORK/worker-1.log" || true)" -gt "$((closures_before + 1))" ] \
  || fail "worker:1 did not train again after it was taken back"
wait_pid "$CHIEF" 300
[ "$WAIT_RC" = 0 ] || fail "chief exited with $WAIT_RC"
[ "$(json_get "$MODEL/summary.json" "d['global_step']")" = "$STEPS" ] || fail "the job did not complete every step"
echo "worker:1 stopped: declared lost $(python3 -c "print(round($lost_at - $stopped_at, 1))") s after SIGSTOP" \
  "(--worker_silence_timeout_secs=2, probes every --poll_secs=1)"
echo "PASS: sync job of $STEPS steps survived a stopped worker:1, which was taken back and trained again"
