#!/usr/bin/env bash
# ps_replicas 1 (a backup of every shard on the next ps): kill -9 ps:1 mid-run and do not restart
# it. The chief promotes its shards' backups on ps:0 and the job completes at once, with no
# acknowledged update lost (each shard's final version on ps:0 covers every push a worker saw
# acknowledged) and a test accuracy within a point of an unfaulted run of the same length. Then a
# second faulted run restarts ps:1 later: it receives copies of the shards and is a backup again
# (its stats list backup shards).
source "$(dirname "$0")/lib.sh" "$1"

STEPS=${STEPS:-3000}

# run_job NAME MODE STEPS: MODE "none" (unfaulted), "kill" (ps:1 killed, never back) or "return"
# (killed, started again). Logs under $WORK/NAME/; SWITCH_SECONDS: from the kill to the failover line.
run_job() {
  local name=$1 mode=$2 steps=$3 i t0
  mkdir -p "$WORK/$name"
  make_cluster 2 2
  # --keep_serving: the test stops them itself, after reading the chief's result.
  for i in 0 1; do start ps "$i" pstrain-ps --keep_serving; PS_PIDS[$i]=$LAST_PID; done
  for i in 0 1; do start worker "$i" pstrain-worker --threads=1 --keep_serving; W_PIDS[$i]=$LAST_PID; done
  start chief 0 pstrain-chief --job=mlp --steps="$steps" --steps_per_closure=5 --ps_replicas=1 --eval_every_steps=250 \
    --model_dir="$WORK/$name/model" --progress_secs=1 --wait_timeout_secs=30
  local chief=$LAST_PID
  if [ "$mode" != none ]; then
    wait_for_line "$WORK/chief-0.log" "step ([5-9][0-9]{2}|[1-9][0-9]{3,})/" 120
    t0=$(date +%s.%N)
    kill -9 "${PS_PIDS[1]}"
    wait_for_line "$WORK/chief-0.log" "ps:1 lost: [0-9]+ backup shards promoted" 60
    SWITCH_SECONDS=$(python3 -c "import sys, time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$t0")
    if [ "$mode" = return ]; then
      start ps 1 pstrain-ps --keep_serving  # the same TF_CONFIG, the same address
      PS_PIDS[1]=$LAST_PID
      wait_for_line "$WORK/chief-0.log" "ps:1 is back: it backs up [0-9]+ shards again" 120
    fi
  fi
  wait_pid "$chief" 300
  [ "$WAIT_RC" = 0 ] || fail "$name: the chief exited with $WAIT_RC"
  # Workers and ps stop on SIGTERM and log what they counted: acknowledged pushes, shard versions.
  for i in 0 1; do kill -TERM "${W_PIDS[$i]}"; wait_pid "${W_PIDS[$i]}" 30; done
  for i in 0 1; do
    if kill -0 "${PS_PIDS[$i]}" 2>/dev/null; then kill -TERM "${PS_PIDS[$i]}"; wait_pid "${PS_PIDS[$i]}" 30; fi
  done
  mv "$WORK"/*.log "$WORK/$name/"
}

# The mean test accuracy of the last 5 evaluations (every 250 steps): one evaluation of an async run
# moves by more than a point from one to the next.
accuracy() {
  python3 - "$WORK/$1/model/metrics.jsonl" <<'PY'
import json, sys
evals = [r["test_accuracy"] for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "eval"]
assert len(evals) >= 5, evals
print("%.4f" % (sum(evals[-5:]) / 5))
PY
}

run_job unfaulted none "$STEPS"
run_job killed kill "$STEPS"
K="$WORK/killed"
[ "$(json_get "$K/model/summary.json" "d['global_step']")" = "$STEPS" ] || fail "the job did not complete every step"
grep -q "ps:1 lost: .* no acknowledged update lost" "$K/chief-0.log" || fail "no failover line in the chief's log"

# Every acknowledged push is in the final versions on ps:0 (it holds every shard now).
python3 - "$K" <<'PY' || fail "acknowledged updates were lost"
import re, sys, collections
d = sys.argv[1]
acked = collections.Counter()
for w in (0, 1):
    for line in open(f"{d}/worker-{w}.log"):
        m = re.search(r"acknowledged pushes: \d+ \((.*)\)", line)
        if m:
            for kv in m.group(1).split():
                k, v = kv.rsplit("=", 1)
                acked[k] += int(v)
versions = {}
for line in open(f"{d}/ps-0.log"):
    m = re.search(r"ps:0 shard (\S+): .*version (\d+)", line)
    if m:
        versions[m.group(1)] = int(m.group(2))
assert acked, "the workers logged no acknowledged pushes"
lost = {k: (n, versions.get(k)) for k, n in acked.items() if versions.get(k, -1) < n}
for k, n in sorted(acked.items()):
    print(f"shard {k}: {n} pushes acknowledged, version {versions.get(k)} on ps:0")
assert not lost, f"shards whose final version is below the pushes acknowledged: {lost}"
PY

A0=$(accuracy unfaulted) A1=$(accuracy killed)
python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - b) <= 0.01 else 1)" \
  "$A0" "$A1" || fail "test accuracy $A1 after losing ps:1, $A0 without (mean of the last 5 evaluations): more than 1 point apart"
SWITCH=$SWITCH_SECONDS
CHIEF_SWITCH=$(sed -n 's/.*ps:1 lost: .* in \([0-9.]*\) s.*/\1/p' "$K/chief-0.log" | head -1)

run_job returned return 1500
R="$WORK/returned"
grep -Eq "ps:1 total: .*[0-9]+ backup shards" "$R/ps-1.log" || fail "the restarted ps:1 holds no backup shards"
echo "PASS: lost ps:1 with ps_replicas 1: $STEPS steps, 0 acknowledged updates lost; training went on" \
  "${SWITCH}s after the kill (the chief's failover itself ${CHIEF_SWITCH}s after the loss was reported);" \
  "test accuracy $A1 (unfaulted $A0; mean of the last 5 evaluations); the restarted ps:1 backs up shards again"
