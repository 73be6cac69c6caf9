#!/usr/bin/env bash
# Nesting: deeply nested TF_CONFIG, job files and a checkpoint's embedded job spec are refused
# before the recursive parser runs (no stack overflow), and messages quote bounded excerpts.
source "$(dirname "$0")/lib.sh" "$1"
P="$BIN/pstrain"
make_cluster 1 1
DEEP=$(nested 100000)
ENV_DEEP=$(nested 60000)  # an environment variable holds at most 128 KiB

for role in chief worker ps; do
  expect_exit 2 "$role-tf-config" "TF_CONFIG nests arrays and objects deeper than 64 levels" \
    env TF_CONFIG="{\"cluster\": $ENV_DEEP}" "$BIN/pstrain-$role"
  echo "{\"cluster\": {\"worker\": $DEEP}}" >"$WORK/tf-config-$role.json"
  expect_exit 2 "$role-tf-config-file" "nests arrays and objects deeper than 64" \
    env -u TF_CONFIG "$BIN/pstrain-$role" --tf_config="$WORK/tf-config-$role.json"
done
expect_exit 2 plan-tf-config "deeper than 64 levels" env TF_CONFIG="{\"cluster\": $ENV_DEEP}" "$P" plan --job=cnn
echo "{\"cluster\": {\"worker\": $(nested 65)}}" >"$WORK/tf-config-65.json"
expect_exit 2 just-too-deep "deeper than 64 levels" env -u TF_CONFIG "$BIN/pstrain-ps" --tf_config="$WORK/tf-config-65.json"

echo "{\"model\": $DEEP}" >"$WORK/deep-job.json"
python3 -c "print('{\"model\": ' + '{\"a\": ' * 100000 + '1' + '}' * 100001)" >"$WORK/deep-objects.json"
for job in deep-job deep-objects; do
  expect_exit 2 "train-$job" "$job.json nests arrays and objects deeper than 64" "$P" train --job="$WORK/$job.json"
  expect_exit 2 "plan-$job" "deeper than 64" "$P" plan --job="$WORK/$job.json" --num_ps=1
  expect_exit 2 "chief-$job" "deeper than 64" env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" \
    --job="$WORK/$job.json" --model_dir="$WORK/m"
done

# Huge values are quoted in part: a megabyte of task type, job name and layer type.
BIG=$(python3 -c "print('w' * 1000000)")
echo "{\"cluster\": {\"worker\": [\"127.0.0.1:1\"], \"ps\": [\"127.0.0.1:2\"]}, \"task\": {\"type\": \"$BIG\", \"index\": 0}}" \
  >"$WORK/big-task.json"
expect_exit 2 big-task-type "task.type \"w+\.\.\.\" is not a task type" "$BIN/pstrain-worker" --tf_config="$WORK/big-task.json"
echo "{\"model\": {\"input_shape\": [2], \"layers\": [{\"type\": \"$BIG\"}]}, \"schedule\": {\"steps\": 1}}" >"$WORK/big.json"
expect_exit 2 big-layer-type "model.layers\[0\].type \"w+\.\.\.\" is not one of" "$P" train --job="$WORK/big.json"
python3 -c "print('{\"a\": \"' + 'x' * 1000000)" >"$WORK/unterminated.json"
expect_exit 2 unterminated "unterminated.json is not valid JSON: error at line 1" "$P" train --job="$WORK/unterminated.json"
for name in big-task-type big-layer-type unterminated; do
  [ "$(wc -c <"$WORK/$name.log")" -lt 2000 ] || fail "$name: the message quotes $(wc -c <"$WORK/$name.log") bytes"
done

# A checkpoint whose embedded job spec nests 100000 deep: every restart of the chief used to crash.
train_linear "$WORK/model" 40
[ "$TRAIN_RC" = 0 ] || fail "training the linear job failed: $(tail -5 "$WORK/chief-0.log")"
for ckpt in "$WORK"/model/ckpt-*; do
  python3 - "$ckpt/index.json" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
open(path, "w").write(text.replace('"job_spec":', '"job_spec": ' + '[' * 100000 + ']' * 100000 + ', "was":', 1))
PY
done
make_cluster 1 1
start_servers 1 1 --threads=1
expect_exit 2 chief-restart "model/ckpt-40: .*nests arrays and objects deeper than 64" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job=linear --steps=60 --model_dir="$WORK/model" \
  --wait_timeout_secs=30
grep -q "none can be used" "$WORK/chief-restart.log" || fail "the chief did not say no checkpoint can be used"
expect_exit 2 evaluate-model "none can be used" "$P" evaluate --checkpoint="$WORK/model"
expect_exit 2 inspect-ckpt "deeper than 64" "$P" inspect --checkpoint="$WORK/model/ckpt-40"
echo "PASS: $CASES cases: nesting is refused before parsing, and messages stay short"
