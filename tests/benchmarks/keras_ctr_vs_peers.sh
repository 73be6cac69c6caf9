#!/usr/bin/env bash
# DeepFM and DCN-v2 at the `ctr` preset's scale (13 numeric, 26 fields of Embedding(100000, 16),
# tower Dense 512-256-1) on the default synthetic CTR set, one epoch per run, against PyTorch and
# TensorFlow. The models are written once in Keras 2 (peers/keras_ctr_models.py: DeepFM with FM's
# second-order term and a first-order Embedding(100000, 1) per field; DCN-v2 with two full-rank
# TensorFlow Recommenders Cross layers). Then, per model, runs alternate, one at a time, REPS times each:
#   - `pstrain train --job=ctr --model_json=MODEL.json --threads=2`
#   - the local pstrain cluster on the same file: 1 ps + 2 workers x 1 thread, async (deploy/local/demo.sh,
#     `pstrain-chief --model_json`; --no-cluster leaves it out)
#   - PyTorch (newest from PyPI), the same model written in PyTorch, 2 threads, nn.Embedding(sparse=True)
#     and torch.optim.Adagrad (peers/torch_keras_ctr.py)
#   - TensorFlow 2.15, the SAME to_json loaded by model_from_json and trained by Model.fit, 2 threads
#     (peers/tf_keras_ctr.py)
# All on the ctr job's settings: Adagrad lr 0.02, initial accumulator 1e-6, epsilon 1e-7, batch 1024.
# Prints each run's training examples/s (the peers: training loop only, file parsing excluded), wall
# time, test AUC and log loss, the medians, and the ratios pstrain / PyTorch and pstrain / TensorFlow.
#
#   tests/benchmarks/keras_ctr_vs_peers.sh [--reps 1] [--bin build/bin] [--models deepfm,dcn_v2] [--no-tf] [--no-torch]
#                                          [--no-cluster]
# Needs: deploy/install-python-peers.sh tf torch (run on first use), and TensorFlow Recommenders 0.7.3,
# downloaded on first use into ${XDG_CACHE_HOME:-~/.cache}/pstrain/tfrs-0.7.3 and put on PYTHONPATH
# only (installing it would change the tf environment's packages).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/tests/benchmarks/bench_lib.sh"
REPS=1 BIN="$ROOT/build/bin" TF=1 TORCH=1 CLUSTER=1 MODELS=deepfm,dcn_v2
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --no-tf) TF=0; shift ;;
    --no-torch) TORCH=0; shift ;;
    --no-cluster) CLUSTER=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
for m in ${MODELS//,/ }; do
  case "$m" in deepfm|dcn_v2) ;; *) echo "keras_ctr_vs_peers: unknown model $m (deepfm, dcn_v2)" >&2; exit 2 ;; esac
done
[ -x "$BIN/pstrain" ] || { echo "keras_ctr_vs_peers: $BIN/pstrain not found; build first" >&2; exit 2; }
PEERS="$ROOT/tests/benchmarks/peers"
TFPY=$(bash "$ROOT/deploy/install-python-peers.sh" --python tf)  # writes the models, whatever runs
[ "$TORCH" = 1 ] && TORCHPY=$(bash "$ROOT/deploy/install-python-peers.sh" --python torch)

TFRS=$(bench_tfrs "$TFPY")

OUT=$(mktemp -d "${TMPDIR:-/tmp}/pstrain-keras-ctr.XXXXXX")
echo "logs in $OUT" >&2
"$BIN/pstrain" datagen ctr --default >"$OUT/datagen.out" 2>&1 || { cat "$OUT/datagen.out" >&2; exit 1; }
TRAIN=$(grep -o '[^ ]*train\.txt' "$OUT/datagen.out" | head -n 1)
TEST=$(grep -o '[^ ]*test\.txt' "$OUT/datagen.out" | head -n 1)
BAYES="$(dirname "$TRAIN")/bayes.json"
(cd "$PEERS" && TF_CPP_MIN_LOG_LEVEL=2 PYTHONPATH="$TFRS" "$TFPY" keras_ctr_models.py "$OUT") >"$OUT/models.log" 2>&1 ||
  { cat "$OUT/models.log" >&2; exit 1; }
grep parameters "$OUT/models.log" >&2

run_train() {  # run_train MODEL
  local log="$OUT/train-$1.r$rep" t0 line
  t0=$(now)
  "$BIN/pstrain" train --job=ctr --model_json="$OUT/$1.json" --threads=2 --train_files="$TRAIN" --test_files="$TEST" \
    >"$log.out" 2>"$log.err" || { echo "pstrain train failed, see $log.err" >&2; return 1; }
  line=$(tail -n 1 "$log.out" | python3 -c "import json,sys; d=json.load(sys.stdin)
print(d['examples_per_second'], float(sys.argv[1]), d['final_test_auc'], d['final_test_logloss'])" "$(echo "$(now) - $t0" | bc)")
  record "train-$1" "$line"
}
echo "host: $(bench_host_line)"
echo "load average before: $(bench_load) (figures are only comparable on an idle machine)"
for rep in $(seq 1 "$REPS"); do
  for m in ${MODELS//,/ }; do
    run_train "$m"
    [ "$CLUSTER" = 1 ] && run_ctr_cluster "cluster-$m" --model_json="$OUT/$m.json"
    [ "$TORCH" = 1 ] && run_peer "torch-$m" "$TORCHPY" torch_keras_ctr.py --model "$m" --train "$TRAIN" --test "$TEST" --threads 2
    [ "$TF" = 1 ] && run_peer "tf-$m" env TF_CPP_MIN_LOG_LEVEL=2 PYTHONPATH="$TFRS" "$TFPY" tf_keras_ctr.py \
      --model_json "$OUT/$m.json" --train "$TRAIN" --test "$TEST" --threads 2
  done
done
echo "load average after: $(bench_load)"
TORCHV=$([ "$TORCH" = 1 ] && "$TORCHPY" -c "import torch; print(torch.__version__)" || echo -)

python3 - "$OUT" "$BAYES" "$MODELS" "$TORCHV" <<'PY'
import json, os, statistics, sys
out, bayes_file, models, torchv = sys.argv[1:5]
def runs(name):
    p = os.path.join(out, name + ".runs")
    return [[float(x) for x in l.split()] for l in open(p) if l.strip()] if os.path.exists(p) else []
med = lambda rs, i: statistics.median(r[i] for r in rs)
data = json.load(open(bayes_file))
print("default synthetic CTR set (%d train / %d test examples), 1 epoch per run, batch 1024, Adagrad 0.02"
      % (data["train"]["examples"], data["test"]["examples"]))
print("%-56s %10s %16s %8s %8s %8s" % ("", "examples/s", "(min-max)", "wall s", "test AUC", "logloss"))
for m in models.split(","):
    rows = [("pstrain train, 2 threads", runs("train-" + m)),
            ("pstrain cluster, 1 ps + 2 workers x 1 thread, async", runs("cluster-" + m)),
            ("PyTorch %s, 2 threads, sparse Adagrad" % torchv, runs("torch-" + m)),
            ("TF 2.15 Model.fit on the same to_json, 2 threads", runs("tf-" + m))]
    print("%s (%d runs each)" % (m, len(rows[0][1])))
    for name, rs in rows:
        if rs:
            print("  %-54s %10.0f %16s %8.1f %8.4f %8.4f" % (name, med(rs, 0), "(%.0f-%.0f)" % (min(r[0] for r in rs),
                  max(r[0] for r in rs)), med(rs, 1), med(rs, 2), med(rs, 3)))
    for ours, side in ((rows[0][1], "pstrain train"), (rows[1][1], "pstrain cluster")):
        for (name, rs), short in zip(rows[2:], ("PyTorch", "TensorFlow")):
            if ours and rs:
                print("  ratio %s / %s: %.2fx examples/s; test AUC %+.4f" % (side, short, med(ours, 0) / med(rs, 0),
                      med(ours, 2) - med(rs, 2)))
print("Bayes-optimal test AUC %.4f, log loss %.4f" % (data["test"]["bayes_auc"], data["test"]["bayes_logloss"]))
PY
echo "lscpu model name: $(lscpu | sed -n 's/^Model name: *//p')"
