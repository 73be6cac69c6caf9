#!/usr/bin/env bash
# Recommendation models, Keras in, Keras and ONNX out, against real Keras 3 (JAX), ONNX and ONNX
# Runtime (the `keras` environment of deploy/install-python-peers.sh, installed on first use;
# skipped, exit 77, when it cannot be):
#   1. For DeepFM, Wide & Deep and two towers (tests/common/graph/testdata, Embedding input_dim 1000):
#      Keras writes initial weights; `pstrain train --init_from` trains with SGD on full batches of a
#      Criteo TSV file, the Embedding tables as sparse variables, and its test loss after each step
#      equals the one Keras reaches from the same weights on the same batches (relative 1e-5).
#   2. A cluster (2 ps, 2 workers, sync) trains Wide & Deep (two tables per id input) from the same
#      Keras weights (`pstrain-chief --init_from`, each table in 2 "mod" shards, one per ps): its test loss
#      after each step equals `pstrain train --init_from`'s (relative 1e-5); `pstrain
#      export` of the checkpoint as Keras weights (loaded by Keras) and as ONNX (run by ONNX Runtime)
#      gives `pstrain evaluate`'s test loss (relative 1e-5).
#   keras_ctr_roundtrip_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
source "$(dirname "$0")/pypi_venv.sh"
PY=$(pypi_python keras) || exit 77
SCRIPT="$(dirname "$0")/keras/keras_ctr.py"
FIXTURES="$(cd "$(dirname "$0")/../common/graph/testdata" && pwd)"

"$BIN/pstrain" datagen ctr --out="$WORK/full" --train=512 --test=512 --vocabulary=1000 --seed=4 >"$WORK/datagen.log" 2>&1 \
  || fail "pstrain datagen failed: $(tail -n 3 "$WORK/datagen.log")"
for split in train test; do cut -f1-4,15-18 "$WORK/full/$split.txt" >"$WORK/$split.txt"; done

curves=""
for m in keras3_deepfm keras3_wide_deep keras3_two_tower; do
  DIR="$WORK/$m"
  mkdir -p "$DIR"
  python3 "$(dirname "$0")/keras/set_input_dim.py" "$FIXTURES/$m.json" "$DIR/model.json" 1000
  "$PY" "$SCRIPT" make "$DIR" "$DIR/model.json" "$WORK/train.txt" "$WORK/test.txt" >"$DIR/make.log" 2>&1 \
    || fail "Keras could not train $m: $(tail -n 5 "$DIR/make.log")"
  "$BIN/pstrain" train --job="$DIR/job.json" --init_from="$DIR/init.weights.h5" --threads=2 \
    >"$DIR/train.out" 2>"$DIR/train.log" || fail "pstrain train --init_from of $m failed: $(tail -n 3 "$DIR/train.log")"
  tail -n 1 "$DIR/train.out" >"$DIR/train.json"
  python3 - "$DIR/train.json" "$DIR/keras_curve.json" "$m" <<'PY' || fail "pstrain's test losses differ from Keras's for $m"
import json, sys
ours = [e["test_loss"] for e in json.load(open(sys.argv[1]))["per_epoch"]]
keras = json.load(open(sys.argv[2]))
print(sys.argv[3], "pstrain", ours)
print(sys.argv[3], "keras  ", keras)
assert len(ours) == len(keras) == 5, (len(ours), len(keras))
for a, b in zip(ours, keras):
    assert abs(a - b) <= 1e-5 * abs(b), (a, b)
assert keras[-1] < keras[0], "the model did not learn, so the comparison would prove little"
PY
  curves+=" $m $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[-1])" "$DIR/keras_curve.json");"
done

# 2. A cluster's checkpoint of Wide & Deep, exported and loaded by Keras.
DIR="$WORK/keras3_wide_deep"
MODEL="$WORK/model"
python3 - "$DIR/job.json" "$DIR/split_job.json" <<'PY'  # every table in 2 "mod" shards, one per ps
import json, sys
job = json.load(open(sys.argv[1]))
job["partitioner"] = {"type": "fixed_shards", "num_shards": 2, "strategy": "mod"}
json.dump(job, open(sys.argv[2], "w"))
PY
run_cluster_job 2 2 "$MODEL" 120 --job="$DIR/split_job.json" --mode=sync --init_from="$DIR/init.weights.h5"
grep -q "wide_emb1/embeddings/part_1" "$MODEL/ckpt-5/index.json" || fail "the tables were not partitioned"
python3 - "$MODEL/metrics.jsonl" "$DIR/train.json" <<'PY' || fail "the cluster's test losses differ from pstrain train's"
import json, sys
cluster = [r["test_loss"] for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "eval"]
single = [e["test_loss"] for e in json.load(open(sys.argv[2]))["per_epoch"]]
print("cluster", cluster, "\npstrain train", single)
assert len(cluster) == len(single) == 5, (len(cluster), len(single))
for a, b in zip(cluster, single):
    assert abs(a - b) <= 1e-5 * abs(b), (a, b)
PY
evaluate_checkpoint "$MODEL" "$WORK/evaluate.json"
export_checkpoint "$MODEL" keras "$DIR/export.weights.h5"
export_checkpoint "$MODEL" onnx "$DIR/export.onnx"
"$PY" "$SCRIPT" check "$DIR" "$WORK/test.txt" >"$WORK/check.json" 2>"$WORK/check.log" \
  || fail "Keras or ONNX Runtime could not use the exports: $(tail -n 5 "$WORK/check.log")"
ours=$(json_get "$WORK/evaluate.json" "d['test_loss']")
theirs=$(json_get "$WORK/check.json" "d['keras_test_loss']")
onnx=$(json_get "$WORK/check.json" "d['onnx_test_loss']")
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-5*abs(a) else 1)" \
  "$ours" "$theirs" || fail "Keras computes test loss $theirs with the export; pstrain evaluate gives $ours"
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-5*abs(a) else 1)" \
  "$ours" "$onnx" || fail "ONNX Runtime computes test loss $onnx with the export; pstrain evaluate gives $ours"
echo "PASS: SGD curves equal Keras's (last test loss:$curves); the sync cluster from the same weights (mod-split tables)" \
  "follows pstrain train's; Wide & Deep's cluster exports: Keras $theirs," \
  "ONNX Runtime $onnx == evaluate $ours"
