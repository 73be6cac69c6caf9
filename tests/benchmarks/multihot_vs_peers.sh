#!/usr/bin/env bash
# DLRM and DeepFM on multi-hot tf.Example data against TorchRec and TensorFlow. The set
# (peers/multihot_data.py, written once per invocation by TensorFlow): 13 numeric features, 8 one-id
# features and 4 bags of 0..20 ids (Zipf over 100,000 ids, labels from a planted model), as TFRecord
# files (pstrain, TensorFlow) and the same values as .npz (TorchRec). Every model has 12 tables of
# 100,000 x 16 (DeepFM 12 more of 100,000 x 1), bags embedded as the mean of their rows; Adagrad 0.02,
# batch 1024, one epoch, 2 threads. Per model, runs alternate, one at a time, REPS times each:
#   - `pstrain train --job=MODEL-job.json --threads=2`: the model written in Keras 2
#     (peers/keras_multihot_models.py, DLRM's DotInteraction from TensorFlow Recommenders), the
#     bags declared in the job's data.features (combiner mean)
#   - TorchRec (PyPI torchrec with fbgemm-gpu-cpu): EmbeddingBagCollection (mean pooling for the
#     bags) in FBGEMM's fused CPU kernel, Adagrad fused into the backward (peers/torchrec_multihot.py)
#   - TensorFlow 2.15: the same model in tf.keras on ragged inputs, Model.fit (peers/tf_multihot.py)
# Prints each run's training examples/s (the peers: the training loop, file parsing excluded;
# pstrain: its reported rate), wall time, test AUC and log loss, the medians, and the ratios
# pstrain / TorchRec and pstrain / TensorFlow.
#
#   tests/benchmarks/multihot_vs_peers.sh [--reps 1] [--bin build/bin] [--models dlrm,deepfm]
#       [--train 200000] [--test 20000] [--no-tf] [--no-torchrec]
# Needs: deploy/install-python-peers.sh tf torchrec (run on first use), and TensorFlow Recommenders
# 0.7.3, downloaded on first use into ${XDG_CACHE_HOME:-~/.cache}/pstrain/tfrs-0.7.3 and put on
# PYTHONPATH only (installing it would change the tf environment's packages).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/tests/benchmarks/bench_lib.sh"
REPS=1 BIN="$ROOT/build/bin" TF=1 TORCHREC=1 MODELS=dlrm,deepfm NTRAIN=200000 NTEST=20000
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --train) NTRAIN=$2; shift 2 ;;
    --test) NTEST=$2; shift 2 ;;
    --no-tf) TF=0; shift ;;
    --no-torchrec) TORCHREC=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
for m in ${MODELS//,/ }; do
  case "$m" in dlrm|deepfm) ;; *) echo "multihot_vs_peers: unknown model $m (dlrm, deepfm)" >&2; exit 2 ;; esac
done
[ -x "$BIN/pstrain" ] || { echo "multihot_vs_peers: $BIN/pstrain not found; build first" >&2; exit 2; }
PEERS="$ROOT/tests/benchmarks/peers"
TFPY=$(bash "$ROOT/deploy/install-python-peers.sh" --python tf)  # writes the data and models, whatever runs
[ "$TORCHREC" = 1 ] && TRPY=$(bash "$ROOT/deploy/install-python-peers.sh" --python torchrec)

TFRS=$(bench_tfrs "$TFPY")

OUT=$(mktemp -d "${TMPDIR:-/tmp}/pstrain-multihot.XXXXXX")
echo "logs in $OUT" >&2
(cd "$PEERS" && TF_CPP_MIN_LOG_LEVEL=2 "$TFPY" multihot_data.py "$OUT" --train "$NTRAIN" --test "$NTEST" &&
  TF_CPP_MIN_LOG_LEVEL=2 PYTHONPATH="$TFRS" "$TFPY" keras_multihot_models.py "$OUT" "$OUT/train.tfrecord" \
    "$OUT/test.tfrecord") >"$OUT/setup.log" 2>&1 || { cat "$OUT/setup.log" >&2; exit 1; }
grep parameters "$OUT/setup.log" >&2

run_train() {  # run_train MODEL
  local log="$OUT/train-$1.r$rep" t0 line
  t0=$(now)
  "$BIN/pstrain" train --job="$OUT/$1-job.json" --threads=2 >"$log.out" 2>"$log.err" ||
    { echo "pstrain train failed, see $log.err" >&2; return 1; }
  line=$(tail -n 1 "$log.out" | python3 -c "import json,sys; d=json.load(sys.stdin)
print(d['examples_per_second'], float(sys.argv[1]), d['final_test_auc'], d['final_test_logloss'])" "$(echo "$(now) - $t0" | bc)")
  record "train-$1" "$line"
}
echo "host: $(bench_host_line)"
echo "load average before: $(bench_load) (figures are only comparable on an idle machine)"
for rep in $(seq 1 "$REPS"); do
  for m in ${MODELS//,/ }; do
    run_train "$m"
    [ "$TORCHREC" = 1 ] && run_peer "torchrec-$m" "$TRPY" torchrec_multihot.py --model "$m" --train "$OUT/train.npz" \
      --test "$OUT/test.npz" --threads 2
    [ "$TF" = 1 ] && run_peer "tf-$m" env TF_CPP_MIN_LOG_LEVEL=2 "$TFPY" tf_multihot.py --model "$m" \
      --train "$OUT/train.tfrecord" --test "$OUT/test.tfrecord" --threads 2
  done
done
echo "load average after: $(bench_load)"
TRV=$([ "$TORCHREC" = 1 ] && "$TRPY" -c "import torchrec; print(torchrec.__version__)" 2>/dev/null || echo -)

python3 - "$OUT" "$MODELS" "$TRV" "$NTRAIN" "$NTEST" <<'PY'
import os, statistics, sys
out, models, trv, ntrain, ntest = sys.argv[1:6]
def runs(name):
    p = os.path.join(out, name + ".runs")
    return [[float(x) for x in l.split()] for l in open(p) if l.strip()] if os.path.exists(p) else []
med = lambda rs, i: statistics.median(r[i] for r in rs)
print("multi-hot tf.Example set (%s train / %s test examples; 8 one-id features, 4 bags of 0-20 ids), 1 epoch "
      "per run, batch 1024, Adagrad 0.02" % (ntrain, ntest))
print("%-56s %10s %16s %8s %8s %8s" % ("", "examples/s", "(min-max)", "wall s", "test AUC", "logloss"))
for m in models.split(","):
    rows = [("pstrain train, 2 threads", runs("train-" + m)),
            ("TorchRec %s (FBGEMM CPU, fused Adagrad), 2 threads" % trv, runs("torchrec-" + m)),
            ("TF 2.15 Model.fit on ragged bags, 2 threads", runs("tf-" + m))]
    print("%s (%d runs each)" % (m, len(rows[0][1])))
    for name, rs in rows:
        if rs:
            print("  %-54s %10.0f %16s %8.1f %8.4f %8.4f" % (name, med(rs, 0), "(%.0f-%.0f)" % (min(r[0] for r in rs),
                  max(r[0] for r in rs)), med(rs, 1), med(rs, 2), med(rs, 3)))
    ours = rows[0][1]
    for (name, rs), short in zip(rows[1:], ("TorchRec", "TensorFlow")):
        if ours and rs:
            print("  ratio pstrain / %s: %.2fx examples/s; test AUC %+.4f" % (short, med(ours, 0) / med(rs, 0),
                  med(ours, 2) - med(rs, 2)))
PY
echo "lscpu model name: $(lscpu | sed -n 's/^Model name: *//p')"
