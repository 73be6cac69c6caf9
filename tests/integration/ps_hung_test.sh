#!/usr/bin/env bash
# SIGSTOP a ps for longer than the chief's health deadline, then SIGCONT: the chief takes the
# silent ps for lost, pauses, and when it answers again finds its shards intact (nothing restored,
# no update lost); the job completes every step.
source "$(dirname "$0")/lib.sh" "$1"

DEADLINE=3
make_cluster 2 2
for i in 0 1; do start ps "$i" pstrain-ps; PS_PIDS[$i]=$LAST_PID; done
for i in 0 1; do start worker "$i" pstrain-worker --threads=1; done
STEPS=3000
start chief 0 pstrain-chief --job=linear --steps="$STEPS" --steps_per_closure=5 --model_dir="$WORK/model" \
  --progress_secs=1 --wait_timeout_secs=30 --ps_health_deadline_secs="$DEADLINE"
CHIEF=$LAST_PID
wait_for_line "$WORK/chief-0.log" "step [1-9][0-9]*/" 60
kill -STOP "${PS_PIDS[1]}"
STOPPED_AT=$SECONDS
wait_for_line "$WORK/chief-0.log" "lost ps:1 at 127.0.0.1:${PS_PORTS[1]}" 60
sleep_left=$((2 * DEADLINE + 2 - (SECONDS - STOPPED_AT)))  # hold it well past the deadline
[ "$sleep_left" -gt 0 ] && sleep "$sleep_left"
kill -CONT "${PS_PIDS[1]}"
wait_pid "$CHIEF" 240
[ "$WAIT_RC" = 0 ] || fail "the chief exited with $WAIT_RC after ps:1 was stopped and continued"
line=$(grep -E "ps:1 came back with its shards intact after [0-9.]+ s: nothing restored" "$WORK/chief-0.log") \
  || fail "the chief did not say ps:1 came back with its shards intact"
[ "$(json_get "$WORK/model/summary.json" "d['global_step']")" = "$STEPS" ] || fail "the job did not complete every step"
python3 -c "
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l).get('kind') == 'ps_recovery']
assert r and all(x['intact'] and x['lost_updates'] == 0 for x in r), r
" "$WORK/model/metrics.jsonl" || fail "metrics.jsonl does not record an intact return of ps:1"
echo "ps:1 stopped for about $((SECONDS - STOPPED_AT)) s: $line"
echo "PASS: a hung ps (SIGSTOP past the ${DEADLINE} s deadline) was taken back intact; $STEPS steps done"
