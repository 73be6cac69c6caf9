#!/usr/bin/env bash
# A preset model on the hand-written CPU path against the same model read from Keras's to_json
# (--model_json, run by the graph executor): `pstrain train` examples/s of both, run in turn within
# each repetition so that load on the machine hits both alike. Pairs: the cnn preset against the
# seeds' CNN (tests/common/graph/testdata/keras3_seeds_cnn.json), and the mlp preset against the
# same MLP in Keras 3's form (written here from that file's layers), and the ctr preset against the
# same model written by Keras 3 (keras3_ctr_preset.json: 26 Embedding tables as sparse variables, on
# the default synthetic CTR set, batch 1024). Prints every run, the medians
# and the ratio graph / preset (of the medians, and the median of the per-repetition ratios).
# Target: graph >= 0.95x preset.
#
# Usage: tests/benchmarks/keras_graph_vs_preset.sh [STEPS=200] [REPS=3] [THREADS=2]
#   env: BUILD_DIR  the build holding bin/pstrain (default build/)
set -euo pipefail

STEPS=${1:-200}
REPS=${2:-3}
THREADS=${3:-2}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
PSTRAIN=$BUILD_DIR/bin/pstrain
CNN_JSON=$ROOT/tests/common/graph/testdata/keras3_seeds_cnn.json
CTR_JSON=$ROOT/tests/common/graph/testdata/keras3_ctr_preset.json
source "$ROOT/tests/benchmarks/bench_lib.sh"

[ -x "$PSTRAIN" ] || { echo "keras_graph_vs_preset: no $PSTRAIN; build the pstrain target" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The mlp preset (flatten, dense 700 relu, dense 500 relu, dense 10) as a Keras 3 Sequential.
python3 - "$CNN_JSON" "$WORK/mlp.json" <<'PY'
import copy, json, sys
cnn = json.load(open(sys.argv[1]))
layers = cnn["config"]["layers"]
by_class = {l["class_name"]: l for l in layers}
flatten = copy.deepcopy(by_class["Flatten"])
flatten["build_config"] = {"input_shape": [None, 28, 28, 1]}
out = [copy.deepcopy(by_class["InputLayer"]), flatten]
inputs = 784
for i, (units, act) in enumerate([(700, "relu"), (500, "relu"), (10, "linear")]):
    d = copy.deepcopy(by_class["Dense"])
    d["config"].update(name="dense" if i == 0 else "dense_%d" % i, units=units, activation=act)
    d["build_config"] = {"input_shape": [None, inputs]}
    out.append(d)
    inputs = units
cnn["config"]["layers"] = out
cnn["config"]["name"] = "mlp"
json.dump(cnn, open(sys.argv[2], "w"))
PY

run() {  # run JOB [MODEL_JSON]: prints the examples/s of one training run
  local extra=()
  [ -n "${2:-}" ] && extra=(--model_json="$2")
  "$PSTRAIN" train --job="$1" "${extra[@]}" --steps="$STEPS" --threads="$THREADS" --eval=false 2>/dev/null |
    tail -n 1 | python3 -c "import json,sys; print('%.1f' % json.load(sys.stdin)['examples_per_second'])"
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

echo "preset vs Keras graph (--model_json), batch 64 (ctr: 1024), $STEPS steps per run, $THREADS threads, $REPS repetitions in turn"
echo "host: $(bench_host_line)"
echo "load average before: $(bench_load)"
printf "%-5s %14s %14s %10s %14s\n" model "preset ex/s" "graph ex/s" "ratio" "paired ratio"
for pair in "cnn $CNN_JSON" "mlp $WORK/mlp.json" "ctr $CTR_JSON"; do
  read -r job json <<<"$pair"
  preset=() graph=() ratios=()
  for ((r = 1; r <= REPS; r++)); do
    p=$(run "$job")
    g=$(run "$job" "$json")
    preset+=("$p") graph+=("$g")
    ratios+=("$(awk -v a="$g" -v b="$p" 'BEGIN {print a / b}')")
    echo "  $job rep $r: preset $p graph $g" >&2
  done
  mp=$(printf '%s\n' "${preset[@]}" | median)
  mg=$(printf '%s\n' "${graph[@]}" | median)
  mr=$(printf '%s\n' "${ratios[@]}" | median)
  awk -v j="$job" -v p="$mp" -v g="$mg" -v r="$mr" 'BEGIN {printf "%-5s %14.0f %14.0f %9.3fx %13.3fx\n", j, p, g, g / p, r}'
done
echo "load average after: $(bench_load)"
