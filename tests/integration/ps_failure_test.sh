#!/usr/bin/env bash
# kill -9 a ps mid-training: the job stops (a lost ps cannot be recovered yet) with a message
# naming the ps, and the chief exits non-zero.
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 2 2
for i in 0 1; do start ps "$i" pstrain-ps; PS_PIDS[$i]=$LAST_PID; done
for i in 0 1; do start worker "$i" pstrain-worker --threads=1; done
start chief 0 pstrain-chief --job=linear --steps=200000 --model_dir="$WORK/model" --progress_secs=1 --wait_timeout_secs=30
CHIEF=$LAST_PID
wait_for_line "$WORK/chief-0.log" "step [1-9][0-9]*/" 60
kill -9 "${PS_PIDS[1]}"
wait_pid "$CHIEF" 120
[ "$WAIT_RC" != 0 ] || fail "the chief exited 0 after losing a ps"
grep -q "lost ps:1 at 127.0.0.1:${PS_PORTS[1]}" "$WORK/chief-0.log" || fail "the chief did not name the lost ps:1"
echo "PASS: losing ps:1 stopped the job with exit $WAIT_RC and a message naming it"
