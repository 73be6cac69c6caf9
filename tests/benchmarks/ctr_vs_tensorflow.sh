#!/usr/bin/env bash
# The `ctr` preset on the default synthetic CTR set, one epoch per run, against TensorFlow and
# TorchRec. Runs alternate, one at a time, REPS times each:
#   - `pstrain train --job=ctr --threads=2` (one process)
#   - the local pstrain cluster: 1 ps + 2 workers x 1 thread, async (deploy/local/demo.sh)
#   - TensorFlow 2.15: the preset's model in tf_keras under ParameterServerStrategy, 1 ps + 2
#     workers in-process, a custom loop of ClusterCoordinator.schedule (peers/tf_ps_ctr.py)
#   - TorchRec 1.9 (PyTorch 2.14, FBGEMM's CPU kernels), one process, 2 threads (peers/torchrec_ctr.py)
# Prints each run's training examples/s (training loop only; file parsing excluded), wall time,
# test AUC and log loss, the medians, and the ratios. Targets: pstrain >= 2x TensorFlow and >= 1.5x
# TorchRec at a test AUC within 0.005.
#
#   tests/benchmarks/ctr_vs_tensorflow.sh [--reps 1] [--bin build/bin] [--no-tf] [--no-torchrec]
# Needs: deploy/install-python-peers.sh tf torchrec (run on first use).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/tests/benchmarks/bench_lib.sh"
REPS=1 BIN="$ROOT/build/bin" TF=1 TORCHREC=1
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --no-tf) TF=0; shift ;;
    --no-torchrec) TORCHREC=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$BIN/pstrain" ] || { echo "ctr_vs_tensorflow: $BIN/pstrain not found; build first" >&2; exit 2; }
PEERS="$ROOT/tests/benchmarks/peers"
[ "$TF" = 1 ] && TFPY=$(bash "$ROOT/deploy/install-python-peers.sh" --python tf)
[ "$TORCHREC" = 1 ] && TRPY=$(bash "$ROOT/deploy/install-python-peers.sh" --python torchrec)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/pstrain-ctr-tf.XXXXXX")
echo "logs in $OUT" >&2
"$BIN/pstrain" datagen ctr --default >"$OUT/datagen.out" 2>&1 || { cat "$OUT/datagen.out" >&2; exit 1; }
TRAIN=$(grep -o '[^ ]*train\.txt' "$OUT/datagen.out" | head -n 1)
TEST=$(grep -o '[^ ]*test\.txt' "$OUT/datagen.out" | head -n 1)
BAYES="$(dirname "$TRAIN")/bayes.json"

run_train() {
  local log="$OUT/train.r$rep" t0 line
  t0=$(now)
  "$BIN/pstrain" train --job=ctr --threads=2 --train_files="$TRAIN" --test_files="$TEST" >"$log.out" 2>"$log.err" ||
    { echo "pstrain train failed, see $log.err" >&2; return 1; }
  line=$(tail -n 1 "$log.out" | python3 -c "import json,sys; d=json.load(sys.stdin)
print(d['examples_per_second'], float(sys.argv[1]), d['final_test_auc'], d['final_test_logloss'])" "$(echo "$(now) - $t0" | bc)")
  record train "$line"
}
echo "host: $(bench_host_line)"
echo "load average before: $(bench_load) (figures are only comparable on an idle machine)"
for rep in $(seq 1 "$REPS"); do
  run_train
  run_ctr_cluster cluster
  [ "$TF" = 1 ] && run_peer tf ./isolated.sh "$TFPY" tf_ps_ctr.py --train "$TRAIN" --test "$TEST" --workers 2 --ps 1
  [ "$TORCHREC" = 1 ] && run_peer torchrec "$TRPY" torchrec_ctr.py --train "$TRAIN" --test "$TEST" --threads 2
done
echo "load average after: $(bench_load)"

python3 - "$OUT" "$BAYES" <<'PY'
import json, os, statistics, sys
out, bayes_file = sys.argv[1:3]
def runs(name):
    p = os.path.join(out, name + ".runs")
    return [[float(x) for x in l.split()] for l in open(p) if l.strip()] if os.path.exists(p) else []
med = lambda rs, i: statistics.median(r[i] for r in rs)
rows = [("pstrain train, 2 threads", runs("train")),
        ("pstrain cluster, 1 ps + 2 workers x 1 thread, async", runs("cluster")),
        ("TF 2.15 PS strategy (tf_keras), 1 ps + 2 workers, custom loop", runs("tf")),
        ("TorchRec 1.9 (torch 2.14, FBGEMM CPU), 1 process, 2 threads", runs("torchrec"))]
rows = [r for r in rows if r[1]]
data = json.load(open(bayes_file))
print("ctr preset, default synthetic set (%d train / %d test examples), 1 epoch per run, %d alternating runs each"
      % (data["train"]["examples"], data["test"]["examples"], len(rows[0][1])))
print("%-64s %10s %16s %8s %8s %8s" % ("", "examples/s", "(min-max)", "wall s", "test AUC", "logloss"))
for name, rs in rows:
    print("%-64s %10.0f %16s %8.1f %8.4f %8.4f" % (name, med(rs, 0), "(%.0f-%.0f)" % (min(r[0] for r in rs), max(r[0] for r in rs)),
                                             med(rs, 1), med(rs, 2), med(rs, 3)))
print("%-64s %10s %16s %8s %8.4f %8.4f" % ("Bayes-optimal (the planted model's probabilities)", "", "", "",
                                         data["test"]["bayes_auc"], data["test"]["bayes_logloss"]))
t = dict(rows)
ours = [("pstrain train", t.get("pstrain train, 2 threads")), ("pstrain cluster", t.get(rows[1][0]) if len(rows) > 1 else None)]
for peer_key, target, short in (("TF 2.15", 2.0, "TensorFlow"), ("TorchRec", 1.5, "TorchRec")):
    peer = next((rs for name, rs in rows if name.startswith(peer_key)), None)
    if not peer:
        continue
    for name, rs in ours:
        if rs:
            print("ratio %s / %s: %.2fx examples/s (target >= %.1fx); test AUC %+.4f (target within 0.005)"
                  % (name, short, med(rs, 0) / med(peer, 0), target, med(rs, 2) - med(peer, 2)))
PY
