#!/usr/bin/env bash
# ctest multihost_cluster: the real binaries on five "hosts" (network namespaces on a bridge, host
# names in TF_CONFIG; deploy/netns/run-cluster.sh), one process per host.
#  1. A short training run (100 steps) completes and reports a test accuracy; its speed sizes run 2.
#  2. A longer run during which worker1 is cut off the network (nft drop) for a while: the job still
#     completes, and the chief's log names worker 1 as lost and as back.
# The second run's length is sized from the first run's speed so that training outlasts the cut on
# a slow machine too (no timing is asserted). Skips (exit 77) without root, ip or nft.
#   multihost_cluster_test.sh SOURCE_DIR BIN_DIR WORK_DIR
set -euo pipefail
src=$1
bin_dir=$2
work=$3
# shellcheck source=deploy/netns/netns.sh
source "$src/deploy/netns/netns.sh"
if why=$(netns_missing); then echo "SKIP: $why"; exit 77; fi

logs=$work/multihost-logs
rm -rf "$logs"
fail() { echo "FAIL: $*"; for f in "$logs"/*/chief.log; do echo "== $f"; tail -n 30 "$f"; done; exit 1; }
run_cluster() { bash "$src/deploy/netns/run-cluster.sh" --bin-dir "$bin_dir" "$@"; }
# summary_field LOG KEY: a number from the chief's final JSON summary (printed on stdout).
summary_field() { grep -o "\"$2\": *[0-9.e+-]*" "$1" | tail -n1 | sed 's/.*: *//'; }

# 1. A short run.
run_cluster --logs "$logs/short" --steps 100 --timeout 240 -- --progress_secs=1 ||
  fail "the short run did not complete (exit status $?)"
accuracy=$(summary_field "$logs/short/chief.log" final_test_accuracy)
[ -n "$accuracy" ] || fail "the short run's summary has no final_test_accuracy"
seconds=$(summary_field "$logs/short/chief.log" train_seconds)  # training only, no start-up or evaluation
[ -n "$seconds" ] || seconds=$(summary_field "$logs/short/chief.log" seconds)
steps_per_second=$(awk -v s="$(summary_field "$logs/short/chief.log" global_step)" -v t="$seconds" \
  'BEGIN { printf "%.2f", (t > 0 ? s / t : 10) }')
echo "short run: 100 steps over 5 hosts, test accuracy $accuracy ($steps_per_second steps/s)"

# 2. worker1 cut off for 8 s once training is under way. Closures time out after 4 s, so worker 1 is
# declared lost during the cut and polled every second; it is back some 4-12 s after the cut ends
# (gRPC's reconnect backoff), 16-25 s into training. The run is sized to about 50 s of training at
# the short run's speed, so that it still outlasts that if training runs twice as fast.
cut_seconds=8
steps=$(awk -v r="$steps_per_second" 'BEGIN { n = int(r * 50); print (n < 100 ? 100 : (n > 20000 ? 20000 : n)) }')
run_cluster --logs "$logs/cut" --steps "$steps" --timeout 400 \
  --cut worker1 --cut-seconds "$cut_seconds" -- \
  --progress_secs=1 --closure_timeout_secs=4 --poll_secs=1 --steps_per_closure=5 ||
  fail "the run with worker1 cut off did not complete (exit status $?)"
chief_log=$logs/cut/chief.log
lost=$(grep -E "lost .*(worker:1|worker1)" "$chief_log" | head -n1) ||
  fail "the chief's log does not say that worker 1 was lost"
back=$(grep -E "(worker:1|worker1).* is back" "$chief_log" | head -n1) ||
  fail "the chief's log does not say that worker 1 came back"
[ -n "$(summary_field "$chief_log" final_test_accuracy)" ] || fail "the cut run's summary has no accuracy"
echo "cut run ($steps steps, worker1 cut for $cut_seconds s):"
echo "  $lost"
echo "  $back"
echo "PASS: multi-host runs complete; a worker cut off is reported lost and taken back"
