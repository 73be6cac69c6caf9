#!/usr/bin/env bash
# Sizes trusted before allocating, and integer overflow into wrong messages: every size a user, a
# file or a checkpoint gives is checked (with checked arithmetic) before anything is allocated, and
# the message names the field; a plan beyond a task's memory budget is refused with how to raise it.
source "$(dirname "$0")/lib.sh" "$1"
P="$BIN/pstrain"
J="$WORK/job"
LINEAR_MODEL='"model": {"input_shape": [2], "loss": "mse", "layers": [{"type": "dense", "units": 1}]}'
SYNTH='"data": {"dataset": "synthetic_linear", "num_examples": 256}'

# Layers, batches, data sets, threads: each field named.
write_job "$J-units.json" "{\"model\": {\"input_shape\": [2], \"layers\": [{\"type\": \"dense\", \"units\": 1000000000000}]}, $SYNTH, \"schedule\": {\"steps\": 1}}"
expect_exit 2 train-units "model.layers\[0\].units must be at most 2147483647" "$P" train --job="$J-units.json"
write_job "$J-wide.json" "{\"model\": {\"input_shape\": [2], \"loss\": \"mse\", \"layers\": [{\"type\": \"dense\", \"units\": 2147483647}, {\"type\": \"dense\", \"units\": 2147483647}]}, $SYNTH, \"schedule\": {\"steps\": 1}}"
expect_exit 2 train-wide "variable dense_1/kernel.*more than pstrain can hold" "$P" train --job="$J-wide.json"
write_job "$J-big.json" "{\"model\": {\"input_shape\": [100], \"loss\": \"mse\", \"layers\": [{\"type\": \"dense\", \"units\": 100000000}]}, $SYNTH, \"schedule\": {\"steps\": 1}}"
expect_exit 2 train-budget "pstrain train would hold .*more than its memory budget.*raise --memory_budget_bytes" \
  "$P" train --job="$J-big.json"
expect_exit 2 train-small-budget "more than its memory budget of 1000 bytes" "$P" train --job=linear --memory_budget_bytes=1000
write_job "$J-batch.json" "{$LINEAR_MODEL, $SYNTH, \"batch_size\": 1000000000000, \"schedule\": {\"steps\": 1}}"
expect_exit 2 train-batch "batch_size must be at most 2147483647" "$P" train --job="$J-batch.json"
write_job "$J-examples.json" "{$LINEAR_MODEL, \"data\": {\"dataset\": \"synthetic_linear\", \"num_examples\": 1000000000000}, \"schedule\": {\"steps\": 1}}"
expect_exit 2 train-examples "data.num_examples must be at most" "$P" train --job="$J-examples.json"
write_job "$J-shape.json" "{\"model\": {\"input_shape\": [1099511627776, 1099511627776], \"layers\": [{\"type\": \"flatten\"}]}, \"schedule\": {\"steps\": 1}}"
expect_exit 2 train-shape "input_shape\[0\] must be at most" "$P" train --job="$J-shape.json"
for t in 100000 0 -3; do
  expect_exit 2 "train-threads$t" "--threads must be" "$P" train --job=linear --threads="$t"
done
expect_exit 2 train-replicas "--replicas must be at most 1024" "$P" train --job=linear --replicas=5000
expect_exit 2 train-steps "--steps must be at most" "$P" train --job=linear --steps=99999999999

# Shapes and plans: products that wrap are reported as themselves.
expect_exit 2 plan-wrap "about 1.84e\+19 elements" "$P" plan --shape=4294967296,4294967296 --num_ps=1
expect_exit 2 plan-wrap3 "about 1.21e\+24 elements" "$P" plan --shape=1099511627776,1099511627776 --num_ps=1
expect_exit 2 plan-budget "ps 0 would hold .*more than its memory budget.*--memory_budget_bytes" \
  "$P" plan --shape=1000000000,1000 --num_ps=2 --partitioner=fixed_shards --num_shards=2
expect_exit 2 plan-budget-job "ps 0 would hold .*values and 2 optimizer slots" "$P" plan --job=cnn --num_ps=2 --memory_budget_bytes=1000
expect_exit 0 plan-fits "memory budget of each ps: [0-9.]+ [KMGT]iB" "$P" plan --job=cnn --num_ps=2
expect_exit 2 plan-num-ps "--num_ps must be at most" "$P" plan --job=cnn --num_ps=99999999

# A variable under the per-shard cap in every shard but 4 TiB in all: the chief refuses the plan
# before it creates anything; a chief given a larger budget meets the ps's own.
write_job "$J-4tb.json" "{\"model\": {\"input_shape\": [1048576], \"loss\": \"mse\", \"layers\": [{\"type\": \"dense\", \"units\": 1048576}]}, $SYNTH, \"schedule\": {\"steps\": 1}, \"partitioner\": {\"type\": \"max_size\", \"max_shard_bytes\": 1073741824}}"
make_cluster 1 1
expect_exit 2 chief-4tb "ps:0 at 127.0.0.1:[0-9]+ would hold 12.0 TiB .*raise pstrain-chief's --memory_budget_bytes" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job="$J-4tb.json" --model_dir="$WORK/m4tb"
start ps 0 pstrain-ps --memory_budget_bytes=1073741824
PS=$LAST_PID
start worker 0 pstrain-worker --threads=1
expect_exit 2 ps-4tb "creating variables on ps:0.*ps:0 would hold .*give pstrain-ps a larger --memory_budget_bytes" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job="$J-4tb.json" --model_dir="$WORK/m4tb" \
  --memory_budget_bytes=9000000000000000 --wait_timeout_secs=30
wait_pid "$PS" 15  # told by the chief; it never allocated the shards
[ "$WAIT_RC" = 1 ] || fail "the ps exited $WAIT_RC after refusing the shards (want 1, told by the chief)"

# TF_CONFIG integers beyond int64, and flags that overflow.
expect_exit 2 worker-index "task.index 18446744073709551615 is out of range" \
  env TF_CONFIG='{"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}, "task": {"type": "worker", "index": 18446744073709551615}}' \
  "$BIN/pstrain-worker"
expect_exit 2 chief-steps-int "flag --steps=\"99999999999999999999\" is not a valid value" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --steps=99999999999999999999
expect_exit 2 ps-budget-neg "--memory_budget_bytes must not be negative" \
  env TF_CONFIG="$(tf_config ps 0)" "$BIN/pstrain-ps" --memory_budget_bytes=-1

# Shapes read from a checkpoint: an index promising [10^12, 1] is corrupt, not allocated.
train_linear "$WORK/model" 40
[ "$TRAIN_RC" = 0 ] || fail "training the linear job failed: $(tail -5 "$WORK/chief-0.log")"
python3 - "$WORK/model/ckpt-40/index.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for s in d["shards"]:
    s["full_shape"][0] = 1000000000000
    s["rows"] = 1000000000000 if s["variable_name"].endswith("bias") else s["rows"]
json.dump(d, open(sys.argv[1], "w"))
PY
expect_exit 2 inspect-huge "ckpt-40/index.json|no saved slice|holds" "$P" inspect --checkpoint="$WORK/model/ckpt-40"
expect_exit 2 evaluate-huge "ckpt-40" "$P" evaluate --checkpoint="$WORK/model/ckpt-40" --job=linear
# Every restart of the chief crashed on it: now it resumes from the checkpoint before and keeps the
# edited one aside, untouched.
make_cluster 1 1
start_servers 1 1 --threads=1
expect_exit 0 chief-restart-huge "resumed from $WORK/model/ckpt-20 at step 20" env TF_CONFIG="$(tf_config chief 0)" \
  "$BIN/pstrain-chief" --job=linear --steps=60 --model_dir="$WORK/model" --wait_timeout_secs=30
grep -q "moved the unusable checkpoint $WORK/model/ckpt-40 aside" "$WORK/chief-restart-huge.log" ||
  fail "the chief did not set the edited checkpoint aside: $(tail -5 "$WORK/chief-restart-huge.log")"
# Data files whose IDX header promises more than they hold.
mkdir -p "$WORK/idx"
python3 - "$WORK/idx" <<'PY'
import struct, sys
d = sys.argv[1]
open(d + "/train-images-idx3-ubyte", "wb").write(struct.pack(">IIII", 0x803, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF) + b"\0" * 64)
open(d + "/train-labels-idx1-ubyte", "wb").write(struct.pack(">II", 0x801, 2) + b"\0\1")
PY
expect_exit 2 train-idx "IDX file .*train-images-idx3-ubyte's header.*more than pstrain can hold" \
  "$P" train --job=cnn --data_dir="$WORK/idx" --steps=1
echo "PASS: $CASES cases: sizes are checked before anything is allocated, each field named"
