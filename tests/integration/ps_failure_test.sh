#!/usr/bin/env bash
# kill -9 a ps mid-training (async, 2 ps, 2 workers, the mlp on Fashion-MNIST), restarted by
# deploy/local/supervise.sh as an orchestrator would: the chief takes it back with its shards from
# the newest checkpoint (the other ps keeps its newer state), the job completes, and its test
# accuracy is within 1 point of an unfaulted run of the same length (run first, in this test).
# The chief's log and metrics.jsonl state the updates lost and the pause.
source "$(dirname "$0")/lib.sh" "$1"
STEPS=${STEPS:-1200}
CHIEF_ARGS=(--job=mlp --steps="$STEPS" --steps_per_closure=5 --checkpoint_every_steps=300 --progress_secs=1
            --wait_timeout_secs=60)

accuracy() { json_get "$1/summary.json" "d['final_test_accuracy']"; }

# The unfaulted run.
make_cluster 2 2
start_servers 2 2 --threads=1
start chief 0 pstrain-chief "${CHIEF_ARGS[@]}" --model_dir="$WORK/base"
wait_pid "$LAST_PID" 280
[ "$WAIT_RC" = 0 ] || fail "the unfaulted run's chief exited with $WAIT_RC"
for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
PIDS=()
mv "$WORK/chief-0.log" "$WORK/base-chief.log"

# The faulted run: every ps under the supervisor.
make_cluster 2 2
for i in 0 1; do start_supervised ps "$i" pstrain-ps; SUP[$i]=$LAST_PID; done
for i in 0 1; do start worker "$i" pstrain-worker --threads=1; done
start chief 0 pstrain-chief "${CHIEF_ARGS[@]}" --model_dir="$WORK/model"
CHIEF=$LAST_PID
wait_for_line "$WORK/chief-0.log" "saved checkpoint .*/ckpt-300" 240
wait_for_line "$WORK/chief-0.log" "step (3[5-9][0-9]|[4-9][0-9][0-9])/" 120  # updates after the checkpoint
PS1_PID=$(supervised_pid "${SUP[1]}") || fail "no pstrain-ps under the supervisor of ps:1"
kill -9 "$PS1_PID"
wait_for_line "$WORK/ps-1.log" "restart 1 of" 30
wait_pid "$CHIEF" 280
[ "$WAIT_RC" = 0 ] || fail "the chief exited with $WAIT_RC after ps:1 was killed and restarted"
LOG="$WORK/chief-0.log"
grep -q "lost ps:1 at 127.0.0.1:${PS_PORTS[1]}" "$LOG" || fail "the chief did not name the lost ps:1 and its address"
line=$(grep -E "ps:1 is back at step [0-9]+: its shards restored from .*/ckpt-[0-9]+; lost [0-9]+ updates" "$LOG") \
  || fail "the chief did not say where ps:1's shards came from and how many updates were lost"
record=$(python3 -c "
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l).get('kind') == 'ps_recovery']
assert len(r) == 1 and r[0]['ps'] == 1 and not r[0]['intact'] and r[0]['lost_updates'] > 0, r
print('lost_updates=%d pause_seconds=%.1f step=%d checkpoint_step=%d' % (r[0]['lost_updates'], r[0]['pause_seconds'], r[0]['step'], r[0]['checkpoint_step']))
" "$WORK/model/metrics.jsonl") || fail "metrics.jsonl has no ps_recovery record with the lost updates"
[ "$(json_get "$WORK/model/summary.json" "d['global_step']")" = "$STEPS" ] || fail "the job did not complete every step"
base=$(accuracy "$WORK/base") faulted=$(accuracy "$WORK/model")
python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - b) <= 0.01 else 1)" \
  "$base" "$faulted" || fail "test accuracy $faulted after losing ps:1, $base unfaulted: more than 1 point apart"
echo "ps:1 killed and restarted: $line"
echo "ps_recovery record: $record"
echo "PASS: test accuracy $faulted after losing ps:1 vs $base unfaulted ($STEPS steps)"
