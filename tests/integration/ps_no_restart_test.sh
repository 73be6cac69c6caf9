#!/usr/bin/env bash
# kill -9 a ps mid-training and never start it again: after --ps_recovery_timeout_secs the job
# fails (non-zero exit) with a message naming the ps, its address and the flag.
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 2 2
for i in 0 1; do start ps "$i" pstrain-ps; PS_PIDS[$i]=$LAST_PID; done
for i in 0 1; do start worker "$i" pstrain-worker --threads=1; done
start chief 0 pstrain-chief --job=linear --steps=200000 --model_dir="$WORK/model" --progress_secs=1 \
  --wait_timeout_secs=30 --ps_recovery_timeout_secs=5
CHIEF=$LAST_PID
wait_for_line "$WORK/chief-0.log" "step [1-9][0-9]*/" 60
kill -9 "${PS_PIDS[1]}"
wait_for_line "$WORK/chief-0.log" "lost ps:1 at 127.0.0.1:${PS_PORTS[1]}.*waiting up to 5 s" 60
wait_pid "$CHIEF" 60
[ "$WAIT_RC" != 0 ] || fail "the chief exited 0 although ps:1 never came back"
grep -E "the job failed: .*lost ps:1 at 127.0.0.1:${PS_PORTS[1]} .*did not answer again within --ps_recovery_timeout_secs=5 s" \
  "$WORK/chief-0.log" >/dev/null || fail "the failure does not name ps:1, its address and --ps_recovery_timeout_secs"
echo "PASS: ps:1 never came back: the job failed with exit $WAIT_RC naming it and --ps_recovery_timeout_secs"
