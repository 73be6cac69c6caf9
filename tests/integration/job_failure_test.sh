#!/usr/bin/env bash
# A non-retryable error (a worker whose data files are missing) stops the job: the chief names the
# cause and exits non-zero, and every other task is told, logs the reason and exits non-zero too.
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 1 2
start ps 0 pstrain-ps
PS=$LAST_PID
start worker 0 pstrain-worker --threads=1
W0=$LAST_PID
start worker 1 pstrain-worker --threads=1 --data_dir="$WORK/no-such-dir"
W1=$LAST_PID
start chief 0 pstrain-chief --job=mlp --steps=50 --wait_timeout_secs=30 --model_dir="$WORK/model"
CHIEF=$LAST_PID
wait_pid "$CHIEF" 60
[ "$WAIT_RC" != 0 ] || fail "the chief exited 0 although worker:1 cannot read its data"
grep -q "the job failed: .*worker:1.*no-such-dir" "$WORK/chief-0.log" || fail "the chief did not name the cause"
for task in ps-0:$PS worker-0:$W0 worker-1:$W1; do
  name=${task%%:*} pid=${task##*:}
  wait_pid "$pid" 15
  [ "$WAIT_RC" = 1 ] || fail "$name exited $WAIT_RC after the job failed (want 1)"
  grep -q "stopping: chief:0 ended the job (failed): .*no-such-dir" "$WORK/$name.log" || fail "$name did not log the reason"
  grep -q "told ${name/-/:} at " "$WORK/chief-0.log" || fail "the chief did not say it told $name"
done
echo "PASS: the failed job was named by the chief and every other task was told and exited 1"
