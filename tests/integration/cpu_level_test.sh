#!/usr/bin/env bash
# The CPU level of the kernels: every task (ps, worker, chief, evaluator) and `pstrain train` log
# the level they run at; PSTRAIN_CPU_LEVEL forces a lower one; a name that is not a level, or a
# level above this CPU's, makes every binary exit 2 naming the variable.
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 1 1
for role in chief worker ps; do
  rc=0
  PSTRAIN_CPU_LEVEL=avx9 TF_CONFIG="$(tf_config "$role" 0)" "$BIN/pstrain-$role" >"$WORK/bad-$role.out" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "pstrain-$role with PSTRAIN_CPU_LEVEL=avx9 exited $rc, expected 2"
  grep -q 'PSTRAIN_CPU_LEVEL="avx9" is not a CPU level' "$WORK/bad-$role.out" || fail "pstrain-$role: $(cat "$WORK/bad-$role.out")"
done
rc=0
PSTRAIN_CPU_LEVEL=avx9 "$BIN/pstrain" train --job=linear --steps=1 >"$WORK/bad-train.out" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q PSTRAIN_CPU_LEVEL "$WORK/bad-train.out" || fail "pstrain train: exit $rc: $(cat "$WORK/bad-train.out")"
if ! grep -qw avx512f /proc/cpuinfo; then  # a level above this CPU's is refused
  rc=0
  PSTRAIN_CPU_LEVEL=avx512 "$BIN/pstrain" train --job=linear --steps=1 >"$WORK/high.out" 2>&1 || rc=$?
  [ "$rc" = 2 ] && grep -q "supports at most" "$WORK/high.out" || fail "avx512 on this CPU: exit $rc: $(cat "$WORK/high.out")"
fi

# `pstrain train`: the best level by default, the forced one in the header line and the summary.
"$BIN/pstrain" train --job=linear --steps=5 --eval=false >"$WORK/train.out" 2>"$WORK/train.log" || fail "pstrain train failed"
best=$(tail -n 1 "$WORK/train.out" | python3 -c "import json,sys; print(json.load(sys.stdin)['cpu_level'])")
grep -q "cpu kernels $best (.*the best this CPU has)" "$WORK/train.log" || fail "train header: $(cat "$WORK/train.log")"
PSTRAIN_CPU_LEVEL=baseline "$BIN/pstrain" train --job=linear --steps=5 --eval=false >"$WORK/train-base.out" \
  2>"$WORK/train-base.log" || fail "pstrain train at baseline failed"
[ "$(tail -n 1 "$WORK/train-base.out" | python3 -c "import json,sys; print(json.load(sys.stdin)['cpu_level'])")" = baseline ] \
  || fail "summary does not say baseline: $(tail -n 1 "$WORK/train-base.out")"
[ "$best" = baseline ] || grep -q "cpu kernels baseline (.*forced by PSTRAIN_CPU_LEVEL" "$WORK/train-base.log" \
  || fail "forced level not shown: $(cat "$WORK/train-base.log")"

# A cluster with every task forced to baseline: each says so in its log.
export PSTRAIN_CPU_LEVEL=baseline
start_servers 1 1
MODEL="$WORK/model"
EVAL_PORT=$(free_ports 1)
TF_CONFIG="{\"cluster\":${CLUSTER%\}},\"evaluator\":[\"127.0.0.1:$EVAL_PORT\"]},\"task\":{\"type\":\"evaluator\",\"index\":0}}" \
  "$BIN/pstrain-chief" --job=linear --steps=20 --model_dir="$MODEL" --eval_poll_secs=1 >"$WORK/evaluator-0.log" 2>&1 &
PIDS+=("$!")
start chief 0 pstrain-chief --job=linear --steps=20 --model_dir="$MODEL" --wait_timeout_secs=30
wait_pid "$LAST_PID" 120
[ "$WAIT_RC" = 0 ] || fail "chief exited with $WAIT_RC"
for log in ps-0 worker-0 chief-0 evaluator-0; do
  wait_for_line "$WORK/$log.log" "cpu kernels:? baseline" 30
done
echo "PASS: bad levels refused; train defaults to $best; ps, worker, chief and evaluator log the forced level"
