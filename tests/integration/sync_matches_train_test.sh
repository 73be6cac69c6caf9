#!/usr/bin/env bash
# Sync mode: 2 ps + 2 workers, each step uses both workers and the ps apply the mean once. With
# full-batch steps (the data set is one global batch, so the data order cannot matter) the model
# after a few steps equals `pstrain train` with the global batch in one process, within float
# tolerance (compared through the test loss, which depends on every parameter).
# Usage: sync_matches_train_test.sh BIN_DIR [tensor_channel|grpc]  (how pulls and pushes travel)
source "$(dirname "$0")/lib.sh" "$1"
TRANSPORT=${2:-tensor_channel}

cat >"$WORK/job.json" <<'JSON'
{"name": "linear-full-batch",
 "model": {"input_shape": [2], "loss": "mse", "layers": [{"type": "dense", "units": 1}]},
 "optimizer": {"type": "adam", "learning_rate": 0.05},
 "data": {"dataset": "synthetic_linear", "num_examples": 64},
 "batch_size": 64, "schedule": {"steps": 6, "steps_per_closure": 2}, "mode": "sync", "seed": 11}
JSON
make_cluster 2 2
start_servers 2 2 --threads=1 --ps_transport="$TRANSPORT"
MODEL="$WORK/model"
start chief 0 pstrain-chief --job="$WORK/job.json" --model_dir="$MODEL" --wait_timeout_secs=30 --ps_transport="$TRANSPORT"
wait_pid "$LAST_PID" 120
[ "$WAIT_RC" = 0 ] || fail "chief exited with $WAIT_RC"
"$BIN/pstrain" train --job="$WORK/job.json" --threads=1 >"$WORK/train.out" 2>"$WORK/train.log" || fail "pstrain train failed"
tail -n 1 "$WORK/train.out" >"$WORK/train.json"
cluster=$(json_get "$MODEL/summary.json" "d['final_test_loss']")
single=$(json_get "$WORK/train.json" "d['final_test_loss']")
steps=$(json_get "$WORK/train.json" "d['steps']")
[ "$steps" = 6 ] || fail "pstrain train ran $steps steps, expected 6"
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-4*max(abs(a),1e-3) else 1)" \
  "$cluster" "$single" || fail "sync cluster test loss $cluster differs from pstrain train's $single"
via="the tensor channel"
[ "$TRANSPORT" = grpc ] && via="unary gRPC"
grep -q "tensors to the ps over $via" "$WORK/worker-0.log" || fail "worker 0 did not send tensors over $via"
echo "PASS: sync cluster $cluster == pstrain train $single after 6 full-batch steps, tensors over $via"
