#!/usr/bin/env bash
# pstrain-chief --init_from: a cluster job (2 ps, 2 workers) starts from a Keras weights file, against
# real Keras 3 (the `keras` environment of deploy/install-python-peers.sh, installed on first use;
# skipped, exit 77, when it cannot be):
#   1. bad input is refused at start, exit 2, naming what is wrong: a file missing a variable, a job
#      whose model is not a Keras model, --ephemeral;
#   2. step 0: --init_only restores the starting values on the ps (the model partitioned over both)
#      and has them save ckpt-0; its export equals the file bit for bit, BatchNormalization's moving
#      statistics included (the file's values shifted first, so none is an initializer's);
#   3. training: the sync cluster's test loss after each of its SGD steps equals `pstrain train
#      --init_from`'s with the same global batch (relative 1e-5) and Keras's (relative 1e-4);
#   4. a checkpoint wins: a chief given --init_from on a model dir with a checkpoint resumes it;
#   5. a ps lost before the first training checkpoint (kill -9, restarted by deploy/local/supervise.sh)
#      comes back with the starting values: the chief restores its shards from ckpt-0, the
#      --init_from checkpoint, and the job completes.
#   keras_init_from_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
source "$(dirname "$0")/pypi_venv.sh"
PY=$(pypi_python keras) || exit 77
KERAS="$(dirname "$0")/keras"
for kind in residual mlp; do
  mkdir -p "$WORK/$kind"
  "$PY" "$KERAS/keras_roundtrip.py" make "$WORK/$kind" "$kind" >"$WORK/make-$kind.txt" 2>&1 \
    || fail "Keras could not make the $kind model: $(tail -n 5 "$WORK/make-$kind.txt")"
done
RES="$WORK/residual"
MLP="$WORK/mlp"

# 1. Refused at start, before any task is waited for (none is started).
make_cluster 2 2
"$PY" "$KERAS/weights_file.py" drop "$RES/init.weights.h5" "$WORK/drop.weights.h5" layers/batch_normalization/vars/3
chief() { TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --wait_timeout_secs=5 "$@"; }
expect_exit 2 missing_variable "--init_from=.*drop.weights.h5.*layer 'bn'.*holds 3 variables; the model's layer has 4 \(bn/gamma, bn/beta, bn/moving_mean, bn/moving_variance" \
  chief --job="$RES/job.json" --model_dir="$WORK/refused" --init_from="$WORK/drop.weights.h5"
expect_exit 2 not_keras "--init_from=.*job \"linear\" has no Keras model" \
  chief --job=linear --model_dir="$WORK/refused" --init_from="$RES/init.weights.h5"
expect_exit 2 ephemeral "--init_from needs --model_dir" \
  chief --job="$RES/job.json" --ephemeral --init_from="$RES/init.weights.h5"
expect_exit 2 missing_file "--init_from=.*nothing.weights.h5.*does not exist" \
  chief --job="$RES/job.json" --model_dir="$WORK/refused" --init_from="$WORK/nothing.weights.h5"
[ ! -e "$WORK/refused/ckpt-0" ] || fail "a refused chief wrote a checkpoint"

# 2. Step 0 on the ps: every variable split over both ps, ckpt-0 rewritten by them.
"$PY" "$KERAS/weights_file.py" shift "$RES/init.weights.h5" "$WORK/shifted.weights.h5" >/dev/null
python3 - "$RES/job.json" "$WORK/split.json" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
job["partitioner"] = {"type": "fixed_shards", "num_shards": 2}
json.dump(job, open(sys.argv[2], "w"))
PY
cp "$RES/model.json" "$WORK/model.json"  # the job names its model relative to itself
init_only_cluster 2 "$WORK/step0" --job="$WORK/split.json" --init_from="$WORK/shifted.weights.h5"
grep -q "restored the starting values of .*ckpt-0" "$WORK/chief-0.log" || fail "the chief did not restore ckpt-0"
python3 - "$WORK/step0/ckpt-0/index.json" <<'PY' || fail "ckpt-0 is not the ps's (partitioned) save"
import json, sys
names = [s["shard_name"] for s in json.load(open(sys.argv[1]))["shards"]]
assert "bn/moving_variance/part_1" in names and "h1/kernel/part_0" in names, names
PY
export_checkpoint "$WORK/step0/ckpt-0" keras "$WORK/step0.weights.h5"
"$PY" "$KERAS/weights_file.py" same "$WORK/shifted.weights.h5" "$WORK/step0.weights.h5" >"$WORK/same0.txt" 2>&1 \
  || fail "the ps's step-0 values are not the file's: $(tail -n 3 "$WORK/same0.txt")"

# 3. Training: the sync cluster (2 workers x 128 examples) against one process with the batch of 256.
run_cluster_job 2 2 "$WORK/cluster" 120 --job="$MLP/job.json" --mode=sync --init_from="$MLP/init.weights.h5"
"$BIN/pstrain" train --job="$MLP/job.json" --init_from="$MLP/init.weights.h5" --threads=1 \
  >"$WORK/train.out" 2>"$WORK/train.log" || fail "pstrain train --init_from failed: $(tail -n 3 "$WORK/train.log")"
tail -n 1 "$WORK/train.out" >"$WORK/train.json"
python3 - "$WORK/cluster/metrics.jsonl" "$WORK/train.json" "$MLP/keras_curve.json" <<'PY' \
  || fail "the cluster's curve differs from pstrain train's or Keras's"
import json, sys
cluster = [json.loads(l) for l in open(sys.argv[1])]
cluster = [r["test_loss"] for r in cluster if r.get("kind") == "eval"]
single = [e["test_loss"] for e in json.load(open(sys.argv[2]))["per_epoch"]]
keras = json.load(open(sys.argv[3]))
print("cluster", cluster, "\npstrain train", single, "\nkeras", keras)
assert len(cluster) == len(single) == len(keras) == 5, (len(cluster), len(single), len(keras))
for a, b, k in zip(cluster, single, keras):
    assert abs(a - b) <= 1e-5 * abs(b), ("cluster vs pstrain train", a, b)
    assert abs(a - k) <= 1e-4 * abs(k), ("cluster vs Keras", a, k)
assert keras[-1] < 0.9 * keras[0], "the model did not learn, so the comparison would prove little"
PY

# 4. A checkpoint wins over --init_from (as TensorFlow restores over initial values).
export_checkpoint "$WORK/cluster" keras "$WORK/trained.weights.h5"
"$PY" "$KERAS/weights_file.py" differ "$WORK/trained.weights.h5" "$MLP/init.weights.h5" \
  || fail "training did not change the weights"
init_only_cluster 2 "$WORK/cluster" --job="$MLP/job.json" --init_from="$MLP/init.weights.h5"
grep -q "init_from is not used: resuming from .*ckpt-5" "$WORK/chief-0.log" \
  || fail "the chief did not say it resumed the checkpoint over --init_from: $(tail -n 5 "$WORK/chief-0.log")"
export_checkpoint "$WORK/cluster" keras "$WORK/resumed.weights.h5"
"$PY" "$KERAS/weights_file.py" same "$WORK/trained.weights.h5" "$WORK/resumed.weights.h5" >"$WORK/same5.txt" 2>&1 \
  || fail "the resumed values are not the checkpoint's: $(tail -n 3 "$WORK/same5.txt")"
# 5. A ps lost before the first training checkpoint: its shards come back from ckpt-0 (--init_from).
python3 - "$MLP/job.json" "$WORK/long.json" <<'PY'
import json, os, sys
job = json.load(open(sys.argv[1]))
job["model"]["keras_json"] = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), job["model"]["keras_json"])
job["batch_size"] = 8  # 32 steps an epoch
job["schedule"] = {"steps": 6000, "steps_per_closure": 5}
json.dump(job, open(sys.argv[2], "w"))
PY
make_cluster 2 2
for i in 0 1; do start_supervised ps "$i" pstrain-ps; SUP[$i]=$LAST_PID; done
for i in 0 1; do start worker "$i" pstrain-worker --threads=1; done
start chief 0 pstrain-chief --job="$WORK/long.json" --model_dir="$WORK/lost" --init_from="$MLP/init.weights.h5" \
  --progress_secs=1 --wait_timeout_secs=60
CHIEF=$LAST_PID
wait_for_line "$WORK/chief-0.log" "step ([2-9][0-9]|[1-9][0-9][0-9]+)/6000" 120
PS1_PID=$(supervised_pid "${SUP[1]}") || fail "no pstrain-ps under the supervisor of ps:1"
kill -9 "$PS1_PID"
wait_pid "$CHIEF" 240
[ "$WAIT_RC" = 0 ] || fail "the chief exited $WAIT_RC after ps:1 was lost: $(tail -n 5 "$WORK/chief-0.log")"
back=$(grep -E "ps:1 is back at step [0-9]+: its shards restored from .*/lost/ckpt-0;" "$WORK/chief-0.log") \
  || fail "ps:1 did not come back from ckpt-0 (the --init_from values): $(grep -E "ps:1|ckpt" "$WORK/chief-0.log" | tail -n 5)"
[ "$(json_get "$WORK/lost/summary.json" "d['global_step']")" = 6000 ] || fail "the job did not complete every step"
for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
PIDS=()
echo "ps lost before the first training checkpoint: $back"

echo "PASS: pstrain-chief --init_from: $CASES bad inputs refused; step 0 on 2 ps equals the file (moving statistics" \
  "included); the sync cluster's curve equals pstrain train --init_from's and Keras's; a checkpoint wins;" \
  "a ps lost before the first checkpoint comes back from ckpt-0"
