#!/usr/bin/env bash
# A small job (the linear preset, 2 ps, 2 workers) trains over real gRPC: its test loss falls
# between the first evaluation and the last, and `pstrain evaluate` on the final checkpoint gives
# the chief's final evaluation.
source "$(dirname "$0")/lib.sh" "$1"

make_cluster 2 2
start_servers 2 2
MODEL="$WORK/model"
# The evaluator sidecar (outside the training cluster) evaluates checkpoints as they appear.
EVAL_PORT=$(free_ports 1)
TF_CONFIG="{\"cluster\":${CLUSTER%\}},\"evaluator\":[\"127.0.0.1:$EVAL_PORT\"]},\"task\":{\"type\":\"evaluator\",\"index\":0}}" \
  "$BIN/pstrain-chief" --job=linear --steps=300 --model_dir="$MODEL" --eval_poll_secs=1 >"$WORK/evaluator-0.log" 2>&1 &
EVALUATOR=$!
PIDS+=("$EVALUATOR")
start chief 0 pstrain-chief --job=linear --steps=300 --eval_every_steps=100 --checkpoint_every_steps=100 \
  --model_dir="$MODEL" --progress_secs=1 --wait_timeout_secs=30
CHIEF=$LAST_PID
wait_pid "$CHIEF" 120
[ "$WAIT_RC" = 0 ] || fail "chief exited with $WAIT_RC"

[ "$(json_get "$MODEL/summary.json" "d['global_step']")" = 300 ] || fail "summary does not say 300 steps"
first=$(python3 -c "import json,sys; print([json.loads(l)['test_loss'] for l in open(sys.argv[1]) if json.loads(l).get('kind')=='eval'][0])" "$MODEL/metrics.jsonl")
final=$(json_get "$MODEL/summary.json" "d['final_test_loss']")
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if b < 0.7*a else 1)" "$first" "$final" \
  || fail "test loss did not fall: first evaluation $first, final $final"
[ -f "$MODEL/ckpt-300/index.json" ] || fail "no final checkpoint ckpt-300"

"$BIN/pstrain" evaluate --checkpoint="$MODEL/ckpt-300" --format=json >"$WORK/evaluate.json" 2>"$WORK/evaluate.log" \
  || fail "pstrain evaluate failed"
single=$(json_get "$WORK/evaluate.json" "d['test_loss']")
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-5*max(1,abs(a)) else 1)" \
  "$final" "$single" || fail "chief's final test loss $final differs from pstrain evaluate's $single"
[ "$(json_get "$WORK/evaluate.json" "d['test_examples']")" = "$(json_get "$MODEL/summary.json" "d['final_test_examples']")" ] \
  || fail "evaluations saw different numbers of test examples"
wait_pid "$EVALUATOR" 60
[ "$WAIT_RC" = 0 ] || fail "evaluator exited with $WAIT_RC"
sidecar=$(python3 -c "import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-1]['test_loss'])" "$MODEL/eval/metrics.jsonl")
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-5*max(1,abs(a)) else 1)" \
  "$final" "$sidecar" || fail "the evaluator's last test loss $sidecar differs from the chief's $final"
grep -q "ckpt-300" "$WORK/evaluator-0.log" || fail "the evaluator did not evaluate ckpt-300"
echo "PASS: loss $first -> $final; pstrain evaluate $single; evaluator $sidecar"
