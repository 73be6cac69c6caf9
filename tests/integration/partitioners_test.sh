#!/usr/bin/env bash
# Each partitioner, with 1 ps and with 3 ps, yields the same initial full weights (checkpoints of
# the freshly initialised variables compared with `pstrain inspect`); a checkpoint written by 3 ps
# under fixed_shards restores into 1 ps without partitioning with the same weights.
source "$(dirname "$0")/lib.sh" "$1"

job_with() {  # job_with NAME PARTITIONER_JSON
  cat >"$WORK/job-$1.json" <<JSON
{"name": "mlp-$1",
 "model": {"input_shape": [28, 28, 1],
           "layers": [{"type": "flatten"}, {"type": "dense", "units": 300, "activation": "relu"},
                      {"type": "dense", "units": 10}]},
 "optimizer": {"type": "adam", "learning_rate": 0.001},
 "batch_size": 64, "schedule": {"steps": 10}, "seed": 7,
 "partitioner": $2}
JSON
}
job_with none '"none"'
job_with fixed '{"type": "fixed_shards", "num_shards": 3}'
job_with min '{"type": "min_size", "min_shard_bytes": 65536, "max_shards": 8}'
job_with max '{"type": "max_size", "max_shard_bytes": 100000}'

init_weights() {  # init_weights NAME NUM_PS MODEL_DIR: prints the inspect JSON's variables
  local name=$1 nps=$2 model=$3 i
  make_cluster "$nps" 1
  local pids=()
  for ((i = 0; i < nps; i++)); do start ps "$i" pstrain-ps; pids+=("$LAST_PID"); done
  start chief 0 pstrain-chief --job="$WORK/job-$name.json" --model_dir="$model" --init_only --wait_timeout_secs=30
  wait_pid "$LAST_PID" 60
  [ "$WAIT_RC" = 0 ] || fail "init_only chief ($name, $nps ps) exited with $WAIT_RC"
  for i in "${pids[@]}"; do kill "$i" 2>/dev/null || true; done
  "$BIN/pstrain" inspect --checkpoint="$model/ckpt-0" --format=json >"$WORK/inspect.json" \
    || fail "pstrain inspect failed on $model/ckpt-0"
  json_get "$WORK/inspect.json" "[(v['name'], v['shape'], v['digest']) for v in d['variables']]"
}

reference=""
for name in none fixed min max; do
  for nps in 1 3; do
    got=$(init_weights "$name" "$nps" "$WORK/model-$name-$nps")
    if [ -z "$reference" ]; then reference=$got; fi
    [ "$got" = "$reference" ] || fail "partitioner $name with $nps ps: initial weights differ:
$got
vs
$reference"
  done
done

# Re-partition: the 3-ps fixed_shards checkpoint restored into 1 ps, unpartitioned.
got=$(init_weights none 1 "$WORK/model-fixed-3")
[ "$got" = "$reference" ] || fail "restoring the 3-ps fixed_shards checkpoint into 1 ps changed the weights"
grep -q "resumed from" "$WORK/chief-0.log" || fail "the chief did not restore the existing checkpoint"
echo "PASS: same initial weights for every partitioner with 1 and 3 ps: $reference"
