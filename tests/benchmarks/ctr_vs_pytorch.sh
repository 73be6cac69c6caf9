#!/usr/bin/env bash
# The `ctr` preset on the default synthetic CTR set (generated on first use), one epoch per run,
# against the PyTorch peer ../shared/peers/pytorch/ctr_criteo.py in its tuned setup (OpenMP
# OpenBLAS, 2 threads). Runs alternate, one at a time, REPS times each:
#   - `pstrain train --job=ctr --threads=2` (one process, no cluster)   target >= 1.5x the peer
#   - the local cluster: 1 ps + 2 workers x 1 thread, async (deploy/local/demo.sh)   target >= 1.0x
#   - the peer, in every variant of its environment: as given, with OMP_WAIT_POLICY=PASSIVE (on a
#     busy machine OpenMP's spinning threads can cost the peer several times its speed), and, when
#     OPENBLAS_CORETYPE is set, each without it; the fastest variant (median) is compared
# Prints the training examples/s of every run (training loop only, file parsing excluded, as the
# peer times it), the medians, the ratios, and each tool's test AUC and log loss after the epoch
# beside the set's Bayes-optimal AUC (quality: pstrain train within 0.005 of the peer).
#
# Usage: tests/benchmarks/ctr_vs_pytorch.sh [--reps 3] [--bin build/bin] [--peers DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/tests/benchmarks/bench_lib.sh"
REPS=3 BIN="$ROOT/build/bin" PEERS="$ROOT/../shared/peers/pytorch"
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --peers) PEERS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3
OB=/usr/lib/x86_64-linux-gnu/openblas-openmp
[ -x "$BIN/pstrain" ] || { echo "ctr_vs_pytorch: $BIN/pstrain not found; build first (deploy/build.sh)" >&2; exit 2; }
[ -f "$PEERS/ctr_criteo.py" ] || { echo "ctr_vs_pytorch: $PEERS/ctr_criteo.py not found; give --peers" >&2; exit 2; }
bench_peer_deps "$PY"
OUT=$(mktemp -d "${TMPDIR:-/tmp}/pstrain-ctr-bench.XXXXXX")
echo "logs in $OUT" >&2

# The default set's files and Bayes figures (generated now when the cache lacks them).
"$BIN/pstrain" datagen ctr --default >"$OUT/datagen.out" 2>&1 || { cat "$OUT/datagen.out" >&2; exit 1; }
TRAIN=$(grep -o '[^ ]*train\.txt' "$OUT/datagen.out" | head -n 1)
TEST=$(grep -o '[^ ]*test\.txt' "$OUT/datagen.out" | head -n 1)
BAYES="$(dirname "$TRAIN")/bayes.json"
[ -f "$TRAIN" ] && [ -f "$TEST" ] && [ -f "$BAYES" ] || { echo "no default set: $(cat "$OUT/datagen.out")" >&2; exit 1; }

# Each run prints "examples/s test_auc test_logloss"; run_* NAME appends it to $OUT/NAME.runs.
record() { echo "$2" >>"$OUT/$1.runs"; echo "rep $rep: $1 $2" >&2; }
run_train() {
  local log="$OUT/train.r$rep" line
  "$BIN/pstrain" train --job=ctr --threads=2 --train_files="$TRAIN" --test_files="$TEST" >"$log.out" 2>"$log.err" ||
    { echo "pstrain train failed, see $log.err" >&2; return 1; }
  line=$(tail -n 1 "$log.out" | "$PY" -c "import json,sys; d=json.load(sys.stdin)
print(d['examples_per_second'], d['final_test_auc'], d['final_test_logloss'])")
  record "$1" "$line"
}
run_cluster() {
  local run="$OUT/cluster.r$rep" line
  bash "$ROOT/deploy/local/demo.sh" --no-build --ps 1 --workers 2 --worker_threads 1 --job ctr --epochs 1 \
    --train_files "$TRAIN" --test_files "$TEST" --run_dir "$run" -- --checkpoint_every_steps=0 >"$run.log" 2>&1 ||
    { echo "cluster run failed, see $run.log" >&2; return 1; }
  line=$("$PY" -c "import json,sys; d=json.load(open(sys.argv[1]))
print(d['examples_per_second'], d['final_test_auc'], d['final_test_logloss'])" "$run/summary.json")
  record "$1" "$line"
}
run_peer() {  # run_peer NAME [ENV ARGS...]: the peer under `env ENV ARGS`
  local name=$1 log="$OUT/$1.r$rep.log" line
  shift
  (cd "$PEERS" && env "$@" LD_LIBRARY_PATH="$OB" timeout 1800 "$PY" ctr_criteo.py --train "$TRAIN" --test "$TEST" \
     --threads 2 --epochs 1) >"$log" 2>&1 || { echo "peer failed, see $log" >&2; return 1; }
  line=$("$PY" -c "import json,sys
for l in open(sys.argv[1]):
    if l.startswith('RESULT '):
        d = json.loads(l[7:]); print(d['train_examples_per_sec'], d['test_auc'], d['test_logloss'])" "$log")
  record "$name" "$line"
}

echo "host: $(bench_host_line)"
echo "pstrain: $("$BIN/pstrain" train --job=ctr --steps=1 --eval=false --train_files="$TRAIN" --test_files="$TEST" 2>&1 >/dev/null | grep -o 'cpu kernels.*' || true)"
echo "load average before: $(bench_load) (figures are only comparable on an idle machine)"
CORETYPE=${OPENBLAS_CORETYPE:-}
for rep in $(seq 1 "$REPS"); do
  run_train train
  run_cluster cluster
  run_peer peer
  run_peer peer-passive OMP_WAIT_POLICY=PASSIVE
  if [ -n "$CORETYPE" ]; then
    run_peer peer-no-coretype -u OPENBLAS_CORETYPE
    run_peer peer-passive-no-coretype -u OPENBLAS_CORETYPE OMP_WAIT_POLICY=PASSIVE
  fi
done
echo "load average after: $(bench_load)"

"$PY" - "$OUT" "$BAYES" "$CORETYPE" <<'PY'
import json, os, statistics, sys
out, bayes_file, coretype = sys.argv[1:4]
def runs(name):
    path = os.path.join(out, name + ".runs")
    return [[float(x) for x in l.split()] for l in open(path) if l.strip()] if os.path.exists(path) else []
med = lambda rs, i: statistics.median(r[i] for r in rs)
ct = " (OPENBLAS_CORETYPE=%s)" % coretype if coretype else ""
peers = [("PyTorch peer, 2 threads, OpenBLAS" + ct, runs("peer")),
         ("PyTorch peer, 2 threads, OpenBLAS, OMP_WAIT_POLICY=PASSIVE" + ct, runs("peer-passive")),
         ("PyTorch peer, 2 threads, OpenBLAS, without OPENBLAS_CORETYPE", runs("peer-no-coretype")),
         ("PyTorch peer, 2 threads, OpenBLAS, PASSIVE, without OPENBLAS_CORETYPE", runs("peer-passive-no-coretype"))]
peers = [(n, rs) for n, rs in peers if rs]
t, c = runs("train"), runs("cluster")
peer_name, peer = max(peers, key=lambda p: med(p[1], 0))
data = json.load(open(bayes_file))
print("ctr preset, default synthetic set (%d train / %d test examples), 1 epoch per run, %d alternating runs each"
      % (data["train"]["examples"], data["test"]["examples"], len(t)))
print("%-72s %10s %16s %8s %8s" % ("", "examples/s", "(min-max)", "test AUC", "logloss"))
for name, rs in [("pstrain train, 2 threads", t), ("pstrain cluster, 1 ps + 2 workers x 1 thread, async", c)] + peers:
    print("%-72s %10.0f %16s %8.4f %8.4f" % (name, med(rs, 0), "(%.0f-%.0f)" % (min(r[0] for r in rs), max(r[0] for r in rs)),
                                         med(rs, 1), med(rs, 2)))
print("%-72s %10s %16s %8.4f %8.4f" % ("Bayes-optimal (the planted model's probabilities)", "", "",
                                       data["test"]["bayes_auc"], data["test"]["bayes_logloss"]))
print("compared with the fastest peer variant: %s" % peer_name)
print("ratio pstrain train / peer:   %.2fx   (target >= 1.5x)" % (med(t, 0) / med(peer, 0)))
print("ratio pstrain cluster / peer: %.2fx   (target >= 1.0x)" % (med(c, 0) / med(peer, 0)))
print("test AUC pstrain train - peer: %+.4f   (target within 0.005)" % (med(t, 1) - med(peer, 1)))
PY
