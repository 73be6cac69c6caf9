#!/usr/bin/env bash
# Sync mode survives a lost worker and stays exact: kill -9 worker 1 mid-training; its data part of
# each round is re-run on worker 0 (the same examples, by part and position), the ps collect each
# part once per step, and the job completes. Worker 1 is started again with the same TF_CONFIG
# and must be taken back and train again. With full-batch steps (each part is one batch, so every
# step of a part reads the same examples) the model equals `pstrain train` with the global batch
# in one process within 1e-4 (through the test loss, which depends on every parameter; one step
# more or less moves it by about 2e-3 at this learning rate).
# One ps: with several, a worker killed between its pushes to two ps leaves one step computed
# from partly newer variables on the re-run (logged as not exact; see the README's Failures).
source "$(dirname "$0")/lib.sh" "$1"

STEPS=${STEPS:-3000}
cat >"$WORK/job.json" <<JSON
{"name": "linear-full-batch-loss",
 "model": {"input_shape": [2], "loss": "mse", "layers": [{"type": "dense", "units": 1}]},
 "optimizer": {"type": "adam", "learning_rate": 0.0002},
 "data": {"dataset": "synthetic_linear", "num_examples": 64},
 "batch_size": 64, "schedule": {"steps": $STEPS, "steps_per_closure": 2}, "mode": "sync", "seed": 11}
JSON
make_cluster 1 2
declare -a WORKER_PIDS
start_servers 1 2 --threads=1
MODEL="$WORK/model"
start chief 0 pstrain-chief --job="$WORK/job.json" --model_dir="$MODEL" --wait_timeout_secs=30 --poll_secs=1
CHIEF=$LAST_PID
wait_for_line "$WORK/worker-1.log" "closure [0-9]+: data part 1 batches [1-9][0-9]{2}" 120
kill -9 "${WORKER_PIDS[1]}"
killed_at=$(date +%s.%N)
wait_for_line "$WORK/chief-0.log" "lost worker:1" 60
wait_for_line "$WORK/worker-0.log" "data part 1 batches" 60  # worker 0 re-runs part 1
rerun_at=$(date +%s.%N)
mv "$WORK/worker-1.log" "$WORK/worker-1-killed.log"
start worker 1 pstrain-worker --threads=1   # the same TF_CONFIG: it comes back
wait_for_line "$WORK/chief-0.log" "worker:1 at .* is back" 60
wait_for_line "$WORK/worker-1.log" "closure [0-9]+: data part 1 batches" 60
wait_pid "$CHIEF" 300
[ "$WAIT_RC" = 0 ] || fail "chief exited with $WAIT_RC"
[ "$(json_get "$MODEL/summary.json" "d['global_step']")" = "$STEPS" ] || fail "the job did not complete every step"
grep -q "not exact" "$WORK"/worker-*.log && fail "a re-run step was not exact"
"$BIN/pstrain" train --job="$WORK/job.json" --threads=1 >"$WORK/train.out" 2>"$WORK/train.log" || fail "pstrain train failed"
tail -n 1 "$WORK/train.out" >"$WORK/train.json"
cluster=$(json_get "$MODEL/summary.json" "d['final_test_loss']")
single=$(json_get "$WORK/train.json" "d['final_test_loss']")
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-4*max(abs(a),1e-3) else 1)" \
  "$cluster" "$single" || fail "sync cluster test loss $cluster differs from pstrain train's $single"
echo "re-run of part 1 on worker 0 began $(python3 -c "print(round($rerun_at - $killed_at, 2))") s after the kill" \
  "(measured by this test's polling, 0.1 s resolution)"
echo "PASS: sync job of $STEPS full-batch steps survived kill -9 of worker:1 (restarted, taken back, trained" \
  "again); test loss $cluster == pstrain train $single"
