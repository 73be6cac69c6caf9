#!/usr/bin/env bash
# A job that finishes ends cleanly: the chief tells every ps and worker the job is done, and they
# exit 0 on their own; a ps started with --keep_serving logs the chief's word and keeps serving
# (SERVING to a health probe) until SIGTERM stops it.
#   job_done_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 2 2
start ps 0 pstrain-ps
PS0=$LAST_PID
start ps 1 pstrain-ps --keep_serving
PS1=$LAST_PID
start worker 0 pstrain-worker --threads=1
W0=$LAST_PID
start worker 1 pstrain-worker --threads=1
W1=$LAST_PID
start chief 0 pstrain-chief --job=linear --steps=60 --wait_timeout_secs=30 --model_dir="$WORK/model"
CHIEF=$LAST_PID
wait_pid "$CHIEF" 120
[ "$WAIT_RC" = 0 ] || fail "the chief exited $WAIT_RC"
for task in ps-0:$PS0 worker-0:$W0 worker-1:$W1; do
  name=${task%%:*} pid=${task##*:}
  wait_pid "$pid" 15
  [ "$WAIT_RC" = 0 ] || fail "$name exited $WAIT_RC after the job was done (want 0)"
  grep -q "stopping: chief:0 ended the job (done): the job is done at step 60" "$WORK/$name.log" \
    || fail "$name did not log why it stopped"
  grep -q "told ${name/-/:} at .* that the job is done" "$WORK/chief-0.log" || fail "the chief did not say it told $name"
done
# ps:1 was told too, and serves on.
grep -q "told ps:1 at .* that the job is done" "$WORK/chief-0.log" || fail "the chief did not say it told ps:1"
wait_for_line "$WORK/ps-1.log" "chief:0 ended the job \(done\): .*; --keep_serving: still serving" 10
kill -0 "$PS1" 2>/dev/null || fail "ps:1 (--keep_serving) exited after the job was done"
"$BIN/pstrain" health "127.0.0.1:${PS_PORTS[1]}" --timeout_secs=5 >"$WORK/health.log" 2>&1 \
  || fail "ps:1 (--keep_serving) does not answer its health check: $(cat "$WORK/health.log")"
kill -TERM "$PS1"
wait_pid "$PS1" 30
[ "$WAIT_RC" = 143 ] || fail "ps:1 exited $WAIT_RC on SIGTERM (want 143)"
echo "PASS: the done job's ps and workers exited 0; the --keep_serving ps served on until SIGTERM"
