#!/usr/bin/env bash
# The local pstrain cluster against TensorFlow's parameter-server cluster of the same shape: the
# `cnn` preset on Fashion-MNIST, 1 chief + 2 workers (1 compute thread each) + 2 ps, async. Runs
# alternate, one at a time, REPS times each:
#   - pstrain: deploy/local/demo.sh (separate processes over gRPC on 127.0.0.1)
#   - TensorFlow 2.15, ParameterServerStrategy over the migration guide's in-process cluster,
#     tf_keras Model.fit and a custom loop of ClusterCoordinator.schedule (peers/tf_ps_cnn.py; in a
#     loopback-only network namespace, since TensorFlow's servers bind 0.0.0.0)
# Prints every run's training examples/s, wall time and test accuracy, the medians and the ratios.
# Target: pstrain >= 2x the faster TensorFlow loop. With --steps the runs are that many steps (TF
# times its steps after a warm-up closure/epoch; pstrain reports its whole run); without, --epochs.
#
#   tests/benchmarks/cnn_vs_tensorflow.sh [--steps 300] [--epochs 1] [--reps 1] [--loops custom,fit] [--bin build/bin]
# Needs: deploy/install-python-peers.sh tf (run on first use), root or unprivileged user namespaces.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/tests/benchmarks/bench_lib.sh"
STEPS=300 EPOCHS=1 REPS=1 BIN="$ROOT/build/bin" LOOPS=custom,fit
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) STEPS=$2; shift 2 ;;
    --epochs) EPOCHS=$2; STEPS=""; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --loops) LOOPS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$BIN/pstrain-chief" ] || { echo "cnn_vs_tensorflow: $BIN/pstrain-chief not found; build first" >&2; exit 2; }
TFPY=$(bash "$ROOT/deploy/install-python-peers.sh" --python tf)
PEERS="$ROOT/tests/benchmarks/peers"
OUT=$(mktemp -d "${TMPDIR:-/tmp}/pstrain-cnn-tf.XXXXXX")
echo "logs in $OUT" >&2
LEN=(--epochs "$EPOCHS")
[ -n "$STEPS" ] && LEN=(--steps "$STEPS")

record() { echo "$2" >>"$OUT/$1.runs"; echo "rep $rep: $1 $2" >&2; }
run_pstrain() {
  local run="$OUT/pstrain.r$rep" t0 line
  t0=$(date +%s.%N)
  timeout 3600 bash "$ROOT/deploy/local/demo.sh" --no-build --ps 2 --workers 2 --worker_threads 1 --job cnn "${LEN[@]}" \
    --run_dir "$run" -- --eval_every_steps=0 --checkpoint_every_steps=0 >"$run.log" 2>&1 ||
    { echo "pstrain cluster failed, see $run.log" >&2; return 1; }
  line=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1]))
print(d['examples_per_second'], float(sys.argv[2]), d['final_test_accuracy'])" "$run/summary.json" \
    "$(echo "$(date +%s.%N) - $t0" | bc)")
  record pstrain "$line"
}
run_tf() {  # run_tf LOOP
  local log="$OUT/tf-$1.r$rep.log" line
  (cd "$PEERS" && timeout 3600 ./isolated.sh "$TFPY" tf_ps_cnn.py --loop "$1" --workers 2 --ps 2 "${LEN[@]}") >"$log" 2>&1 ||
    { echo "TensorFlow ($1) failed, see $log" >&2; return 1; }
  line=$(python3 -c "import json,sys
for l in open(sys.argv[1]):
    if l.startswith('RESULT '):
        d = json.loads(l[7:]); print(d['train_examples_per_sec'], d['wall_seconds'], d['test_accuracy'])" "$log")
  record "tf-$1" "$line"
}

echo "host: $(bench_host_line)"
echo "TensorFlow: $("$TFPY" -c 'import tensorflow as tf, tf_keras; print(tf.__version__, "tf_keras", tf_keras.__version__)' 2>/dev/null)"
echo "load average before: $(bench_load) (figures are only comparable on an idle machine)"
for rep in $(seq 1 "$REPS"); do
  run_pstrain
  for loop in ${LOOPS//,/ }; do run_tf "$loop"; done
done
echo "load average after: $(bench_load)"
python3 - "$OUT" "${STEPS:-}" "$EPOCHS" <<'PY'
import os, statistics, sys
out, steps, epochs = sys.argv[1:4]
def runs(name):
    p = os.path.join(out, name + ".runs")
    return [[float(x) for x in l.split()] for l in open(p) if l.strip()] if os.path.exists(p) else []
med = lambda rs, i: statistics.median(r[i] for r in rs)
rows = [("pstrain cluster (1 chief, 2 workers x 1 thread, 2 ps), async", runs("pstrain")),
        ("TF 2.15 PS strategy, custom loop + ClusterCoordinator.schedule", runs("tf-custom")),
        ("TF 2.15 PS strategy, tf_keras Model.fit", runs("tf-fit"))]
rows = [r for r in rows if r[1]]
print("cnn on Fashion-MNIST, %s, batch 64, %d alternating runs each" %
      ("%s steps per run" % steps if steps else "%s epoch(s) per run" % epochs, len(rows[0][1])))
print("%-66s %12s %18s %10s %9s" % ("", "examples/s", "(min-max)", "wall s", "test acc"))
for name, rs in rows:
    print("%-66s %12.0f %18s %10.1f %9.4f" % (name, med(rs, 0), "(%.0f-%.0f)" % (min(r[0] for r in rs), max(r[0] for r in rs)),
                                          med(rs, 1), med(rs, 2)))
best_name, best = max(rows[1:], key=lambda r: med(r[1], 0))
print("ratio pstrain / %s: %.2fx examples/s   (target >= 2x)" % (best_name.split(", ")[-1], med(rows[0][1], 0) / med(best, 0)))
print("wall time pstrain / %s: %.2fx   (target <= 0.5x)" % (best_name.split(", ")[-1], med(rows[0][1], 1) / med(best, 1)))
PY
