#!/usr/bin/env bash
# Training garbage in silence: job-spec values outside their valid range are refused (Keras's,
# TensorFlow's or PyTorch's checks where they have them), and a loss, gradient or variable that
# turns NaN/Inf stops the job naming the step and the variable (TerminateOnNaN, on by default),
# never saving over the last good checkpoint.
source "$(dirname "$0")/lib.sh" "$1"
P="$BIN/pstrain"
linear_job() {  # linear_job FILE OPTIMIZER_JSON [EXTRA_TOP_LEVEL_JSON]
  write_job "$1" "{\"model\": {\"input_shape\": [2], \"loss\": \"mse\", \"layers\": [{\"type\": \"dense\", \"units\": 1}]},
    \"optimizer\": $2, \"data\": {\"dataset\": \"synthetic_linear\", \"num_examples\": 2048}, \"batch_size\": 64,
    \"schedule\": {\"steps\": 200, \"steps_per_closure\": 5}${3:-}}"
}

# Values outside their range: refused by `pstrain train`, `pstrain plan` and the chief alike.
make_cluster 1 1
i=0
while IFS='|' read -r optimizer message; do
  i=$((i + 1))
  linear_job "$WORK/range$i.json" "$optimizer"
  expect_exit 2 "train-range$i" "$message" "$P" train --job="$WORK/range$i.json"
  expect_exit 2 "chief-range$i" "$message" env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" \
    --job="$WORK/range$i.json" --model_dir="$WORK/m$i"
done <<'CASES'
{"type": "sgd", "learning_rate": 1e300}|optimizer.learning_rate must be at most 3.4e\+38, got 1e\+300
{"type": "adam", "beta_1": 1}|optimizer.beta_1 must be less than 1, got 1 \(as PyTorch's Adam
{"type": "adam", "learning_rate": {"schedule": "piecewise_constant", "boundaries": [10], "values": [0.1, -0.1]}}|optimizer.learning_rate.values\[1\] must be positive, got -0.1
{"type": "sgd", "momentum": 1.5}|optimizer.momentum must be at most 1, got 1.5 \(as Keras's SGD\)
{"type": "rmsprop", "rho": 1}|optimizer.rho must be less than 1
{"type": "adam", "learning_rate": {"schedule": "exponential_decay", "decay_steps": 10, "decay_rate": -2}}|decay_rate must be positive
{"type": "adagrad", "initial_accumulator_value": -1}|initial_accumulator_value must not be negative
{"type": "adam", "epsilon": 0}|optimizer.epsilon must be positive
CASES

# In range, but it blows up: `pstrain train` stops at the first non-finite step, naming it (the
# loss-growth rule, tried below, turned off so that TerminateOnNaN is what stops it).
linear_job "$WORK/blowup.json" '{"type": "sgd", "learning_rate": 1e30}'
expect_exit 2 train-blowup "training diverged at step [0-9]+: .*dense/(kernel|bias).*terminate_on_nan" \
  "$P" train --job="$WORK/blowup.json" --divergence_loss_factor=0
expect_exit 0 train-blowup-off '"steps":200' "$P" train --job="$WORK/blowup.json" --terminate_on_nan=false \
  --divergence_loss_factor=0
linear_job "$WORK/blowup-off.json" '{"type": "sgd", "learning_rate": 1e30}' \
  ', "terminate_on_nan": false, "divergence_loss_factor": 0'
expect_exit 0 train-blowup-off-job '"steps":200' "$P" train --job="$WORK/blowup-off.json"

# Finite garbage: a learning rate too large for the loss to stay small, with NaN checks off (so
# only the loss-growth rule can see it), stops as diverged; the rule is switchable like
# TerminateOnNaN.
linear_job "$WORK/growth.json" '{"type": "sgd", "learning_rate": 3}'
expect_exit 2 train-growth "training diverged at step [0-9]+: the training loss is .*, more than 1000 x the reference loss .*divergence_loss_factor" \
  "$P" train --job="$WORK/growth.json" --terminate_on_nan=false
expect_exit 2 train-growth-factor "must be 0 \(off\) or a number of at least 2" \
  "$P" train --job="$WORK/growth.json" --divergence_loss_factor=1
expect_exit 2 chief-growth-factor "divergence_loss_factor must be 0 \(off\) or at least 2" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job="$WORK/growth.json" --model_dir="$WORK/gf" \
  --divergence_loss_factor=1.5

# The cluster: a schedule that blows up after step 40 stops the chief (exit 2) naming the global
# step and the variable; the checkpoints of steps 20 and 40 stay the newest and evaluate finite.
linear_job "$WORK/late.json" \
  '{"type": "sgd", "learning_rate": {"schedule": "piecewise_constant", "boundaries": [40], "values": [0.01, 1e30]}}'
make_cluster 1 2
start_servers 1 2 --threads=1
expect_exit 2 chief-blowup "the job failed: at global step [0-9]+: worker:[01] .*failed: .*training diverged at .*(dense/|the training loss is)" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job="$WORK/late.json" --model_dir="$WORK/late" \
  --checkpoint_every_steps=20 --wait_timeout_secs=30
newest=$(ls "$WORK/late" | sed -n 's/^ckpt-\([0-9]*\)$/\1/p' | sort -n | tail -1)
[ -n "$newest" ] && [ "$newest" -le 60 ] || fail "newest checkpoint after the blow-up: ckpt-$newest"
expect_exit 0 evaluate-last-good "ckpt-$newest \(step $newest\): test loss [0-9]" "$P" evaluate --checkpoint="$WORK/late" --job=linear
for ckpt in "$WORK"/late/ckpt-*; do  # every checkpoint kept, not only the newest, holds finite values
  expect_exit 0 "inspect-$(basename "$ckpt")" "dense/kernel" "$P" inspect --checkpoint="$ckpt"
  grep -Eqi "nan|inf" "$WORK/inspect-$(basename "$ckpt").log" && fail "$(basename "$ckpt") holds NaN/Inf"
done
# Turned off, the same job goes on to the end.
make_cluster 1 1
start_servers 1 1 --threads=1
expect_exit 0 chief-blowup-off '"state": "done"' env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" \
  --job="$WORK/late.json" --model_dir="$WORK/late-off" --terminate_on_nan=false --divergence_loss_factor=0 \
  --wait_timeout_secs=30
# The cluster too: the worker's step stops the job (exit 2) before it pushes the garbage.
make_cluster 1 1
start_servers 1 1 --threads=1
expect_exit 2 chief-growth "the job failed: .*training diverged at .*the training loss is .*more than 1000 x" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job="$WORK/growth.json" --model_dir="$WORK/growth-c" \
  --terminate_on_nan=false --checkpoint_every_steps=5 --wait_timeout_secs=30
# No checkpoint after step 0 holds the garbage: the job stopped before one was saved.
! ls "$WORK/growth-c" | grep -E '^ckpt-[1-9][0-9]*$' || fail "a checkpoint was saved after the loss grew"
echo "PASS: $CASES cases: values outside their range are refused and divergence stops the job"
