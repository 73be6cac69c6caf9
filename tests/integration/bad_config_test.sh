#!/usr/bin/env bash
# Bad TF_CONFIG, Slurm step or job spec: every binary exits 2 with a message naming the problem.
source "$(dirname "$0")/lib.sh" "$1"

expect_exit2() {  # expect_exit2 NAME PATTERN COMMAND...
  local name=$1 pattern=$2 rc=0
  shift 2
  "$@" >"$WORK/$name.log" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "$name: exit status $rc, expected 2 ($(cat "$WORK/$name.log"))"
  grep -Eq "$pattern" "$WORK/$name.log" || fail "$name: message does not match '$pattern': $(cat "$WORK/$name.log")"
}

make_cluster 1 1
for role in chief worker ps; do
  expect_exit2 "$role-missing" "TF_CONFIG" env -u TF_CONFIG "$BIN/pstrain-$role"
  expect_exit2 "$role-json" "TF_CONFIG" env TF_CONFIG='{"cluster": {"ps": [' "$BIN/pstrain-$role"
  expect_exit2 "$role-range" "index 5" env TF_CONFIG="{\"cluster\":$CLUSTER,\"task\":{\"type\":\"$role\",\"index\":5}}" \
    "$BIN/pstrain-$role"
  expect_exit2 "$role-port" "port" env TF_CONFIG="{\"cluster\":{\"chief\":[\"127.0.0.1:1\"],\"worker\":[\"127.0.0.1:99999\"],\"ps\":[\"127.0.0.1:2\"]},\"task\":{\"type\":\"$role\",\"index\":0}}" \
    "$BIN/pstrain-$role"
done
expect_exit2 chief-wrong-type "task.type is \"worker\"" env TF_CONFIG="$(tf_config worker 0)" "$BIN/pstrain-chief"

echo '{"model": {"input_shape": [2], "layers": [{"type": "dense", "units": -3}]}}' >"$WORK/bad-units.json"
echo '{"model": ' >"$WORK/bad-json.json"
expect_exit2 job-missing "no-such-job" env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job="$WORK/no-such-job.json"
expect_exit2 job-units "units" env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job="$WORK/bad-units.json"
expect_exit2 job-json "bad-json" env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job="$WORK/bad-json.json"
expect_exit2 job-mode "mode" env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job=linear --mode=sometimes
expect_exit2 evaluate-missing "no-such-dir" "$BIN/pstrain" evaluate --checkpoint="$WORK/no-such-dir"
# Nobody answers: the chief gives up after --wait_timeout_secs naming every silent task.
rc=0
TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job=linear --wait_timeout_secs=1 --ephemeral >"$WORK/silent.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "chief with a silent cluster exited $rc, expected 1"
for task in "ps:0 at 127.0.0.1:${PS_PORTS[0]}" "worker:0 at 127.0.0.1:${WORKER_PORTS[0]}"; do
  grep -q "$task" "$WORK/silent.log" || fail "the chief did not name $task as silent: $(cat "$WORK/silent.log")"
done
# A cluster from a Slurm step (--slurm_tasks, no TF_CONFIG) that does not add up: exit 2, named.
STEP=(SLURM_PROCID=0 SLURM_STEP_NUM_TASKS=4 SLURM_STEP_NODELIST="node[1-2]" SLURM_STEP_TASKS_PER_NODE="2(x2)")
expect_exit2 slurm-no-step "SLURM_PROCID is not set: --slurm_tasks needs a Slurm job step" \
  env -u TF_CONFIG "$BIN/pstrain-worker" --slurm_tasks=chief:1,ps:1,worker:2
expect_exit2 slurm-counts "names 5 tasks but the step has 4 \(SLURM_STEP_NUM_TASKS\)" \
  env -u TF_CONFIG "${STEP[@]}" "$BIN/pstrain-chief" --slurm_tasks=chief:1,ps:2,worker:2 --model_dir="$WORK/m"
expect_exit2 slurm-binary "rank 0 is chief:0 .* start rank 0 with pstrain-chief" \
  env -u TF_CONFIG "${STEP[@]}" "$BIN/pstrain-ps" --slurm_tasks=chief:1,ps:1,worker:2
expect_exit2 slurm-nodelist "SLURM_STEP_NODELIST \"node\[1-2\": a '\[' without its '\]'" \
  env -u TF_CONFIG "${STEP[@]}" SLURM_STEP_NODELIST="node[1-2" "$BIN/pstrain-chief" --slurm_tasks=chief:1,ps:1,worker:2 \
  --model_dir="$WORK/m"
expect_exit2 slurm-spelling "configuration: --slurm_tasks=chief:1,ps:1,workers:2: \"workers:2\" is not TYPE:COUNT" \
  env -u TF_CONFIG "${STEP[@]}" "$BIN/pstrain-chief" --slurm_tasks=chief:1,ps:1,workers:2 --model_dir="$WORK/m"
echo "PASS: every binary exits 2 with a clear message; a silent cluster is named; a bad Slurm step is named"
