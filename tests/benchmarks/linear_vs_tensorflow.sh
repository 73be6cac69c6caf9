#!/usr/bin/env bash
# The migration guide's linear model (Dense(1), MSE, Adagrad 0.05): pstrain's sync mode against
# TensorFlow's single worker, step by step. Both start from the same weights (kernel all 0.1, bias
# 0) and take the same batches (each step one batch of the whole 64-example training set, so the
# order of examples cannot matter); after each step both compute the test MSE (16 examples).
#   - pstrain: deploy/local/demo.sh --mode sync, 2 ps + 2 workers (each worker half of every
#     batch), --eval_every_steps=1: the test loss after every step, from metrics.jsonl
#   - TensorFlow 2.15, tf_keras, one worker (peers/tf_linear.py --run curve)
#   - TensorFlow 2.15, tf.estimator train_and_evaluate, the TF1 guide's model_fn on the same data
#     (peers/tf_estimator_linear.py): its final eval loss
# and then the guide's own TF2 programs on its three examples (Model.fit and a custom loop under
# ParameterServerStrategy, 3 workers + 2 ps in-process; random initial weights, async): their
# time for 50 steps and eval loss.
# Target: the curves equal within 1e-4 at every step.
#
#   tests/benchmarks/linear_vs_tensorflow.sh [--steps 30] [--bin build/bin] [--no-guide]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/tests/benchmarks/bench_lib.sh"
STEPS=30 BIN="$ROOT/build/bin" GUIDE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) STEPS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --no-guide) GUIDE=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$BIN/pstrain-chief" ] || { echo "linear_vs_tensorflow: $BIN/pstrain-chief not found; build first" >&2; exit 2; }
TFPY=$(bash "$ROOT/deploy/install-python-peers.sh" --python tf)
PEERS="$ROOT/tests/benchmarks/peers"
OUT=$(mktemp -d "${TMPDIR:-/tmp}/pstrain-linear-tf.XXXXXX")
echo "logs in $OUT" >&2

# y = 0.5 x1 - 0.3 x2 + 0.2 + noise, x uniform in [-1, 1]: 64 training and 16 test rows.
python3 - "$OUT" <<'PY'
import random, sys
r = random.Random(5)
for name, n in (("train.csv", 64), ("test.csv", 16)):
    with open("%s/%s" % (sys.argv[1], name), "w") as f:
        for _ in range(n):
            x1, x2 = r.uniform(-1, 1), r.uniform(-1, 1)
            f.write("%.6f,%.6f,%.6f\n" % (x1, x2, 0.5 * x1 - 0.3 * x2 + 0.2 + r.gauss(0, 0.05)))
PY
cat >"$OUT/job.json" <<JSON
{"name": "linear-sync",
 "model": {"input_shape": [2], "loss": "mse",
           "layers": [{"type": "dense", "units": 1, "kernel_initializer": {"type": "constant", "value": 0.1}}]},
 "optimizer": {"type": "adagrad", "learning_rate": 0.05},
 "data": {"dataset": "csv", "train_file": "$OUT/train.csv", "test_file": "$OUT/test.csv"},
 "batch_size": 64, "schedule": {"steps": $STEPS, "steps_per_closure": 1}, "mode": "sync", "seed": 11}
JSON

echo "host: $(bench_host_line)"
t0=$(date +%s.%N)
bash "$ROOT/deploy/local/demo.sh" --no-build --ps 2 --workers 2 --job "$OUT/job.json" --steps "$STEPS" --mode sync \
  --run_dir "$OUT/pstrain" -- --eval_every_steps=1 --checkpoint_every_steps=0 >"$OUT/pstrain.log" 2>&1 ||
  { echo "pstrain failed, see $OUT/pstrain.log" >&2; exit 1; }
echo "pstrain sync cluster: $(echo "$(date +%s.%N) - $t0" | bc) s wall" >&2
(cd "$PEERS" && "$TFPY" tf_linear.py --run curve --train_csv "$OUT/train.csv" --test_csv "$OUT/test.csv" \
   --steps "$STEPS" --kernel 0.1) >"$OUT/tf-curve.log" 2>&1 || { echo "tf_linear failed, see $OUT/tf-curve.log" >&2; exit 1; }
(cd "$PEERS" && "$TFPY" tf_estimator_linear.py --train_csv "$OUT/train.csv" --test_csv "$OUT/test.csv" --batch 64 \
   --steps "$STEPS" --kernel 0.1) >"$OUT/tf-estimator.log" 2>&1 ||
  { echo "tf_estimator_linear failed, see $OUT/tf-estimator.log" >&2; exit 1; }

python3 - "$OUT" "$STEPS" <<'PY'
import json, sys
out, steps = sys.argv[1], int(sys.argv[2])
def result(log):
    return next(json.loads(l[7:]) for l in open(log) if l.startswith("RESULT "))
ev = {}
train1 = None
for l in open(out + "/pstrain/model/metrics.jsonl"):
    r = json.loads(l)
    if r.get("kind") == "eval":
        ev[r["step"]] = r["test_loss"]
    elif r.get("step") == 1:
        train1 = r["loss"]
ours = [ev.get(s) for s in range(1, steps + 1)]
tf = result(out + "/tf-curve.log")
est = result(out + "/tf-estimator.log")
print("linear model, 64-example full batches, Adagrad 0.05, kernel 0.1, %d steps; test MSE after each step" % steps)
print("%5s %14s %14s %11s" % ("step", "pstrain sync", "TF 2.15 Keras", "|diff|"))
worst = 0.0
for s in range(steps):
    if ours[s] is None:
        print("%5d %14s %14.8f" % (s + 1, "missing", tf["test_loss"][s]))
        worst = float("inf")
        continue
    d = abs(ours[s] - tf["test_loss"][s])
    worst = max(worst, d)
    if s < 5 or s == steps - 1 or (s + 1) % 10 == 0:
        print("%5d %14.8f %14.8f %11.2e" % (s + 1, ours[s], tf["test_loss"][s], d))
if train1 is not None:  # pstrain records training loss at its progress ticks
    print("step 1 training loss: pstrain %.8f, TF %.8f" % (train1, tf["train_loss"][0]))
print("TF 2.15 tf.estimator train_and_evaluate after %d steps: eval loss %.8f (pstrain %.8f, |diff| %.2e)" %
      (est["global_step"], est["eval_loss"], ours[-1], abs(est["eval_loss"] - ours[-1])))
print("largest |diff| over the curve: %.2e   (target <= 1e-4): %s" % (worst, "met" if worst <= 1e-4 else "MISSED"))
PY

if [ "$GUIDE" = 1 ]; then
  for run in ps-fit ps-custom; do
    (cd "$PEERS" && timeout 900 ./isolated.sh "$TFPY" tf_linear.py --run "$run" --workers 3 --ps 2) >"$OUT/tf-$run.log" 2>&1 ||
      { echo "tf_linear --run $run failed, see $OUT/tf-$run.log" >&2; exit 1; }
    python3 -c "import json,sys
d = next(json.loads(l[7:]) for l in open(sys.argv[1]) if l.startswith('RESULT '))
print('the guide, TF 2.15 %s (3 workers, 2 ps, its three examples): 50 steps in %.2f s, eval MSE %.4f' % (sys.argv[2], d['train_seconds'], d['eval_loss']))" \
      "$OUT/tf-$run.log" "$run"
  done
fi
