#!/usr/bin/env bash
# ctest multihost_ps_cut: the real binaries on five "hosts" (network namespaces on a bridge;
# deploy/netns/run-cluster.sh), ps1 cut off the network (nft drop) for 10 s once training is under
# way. The chief's health check (3 s deadline here) takes ps1 for lost and pauses training; when
# the cut heals, ps1 answers with its shards intact, nothing is restored, and the job completes.
# Skips (exit 77) without root, ip or nft.
#   multihost_ps_cut_test.sh SOURCE_DIR BIN_DIR WORK_DIR
set -euo pipefail
src=$1
bin_dir=$2
work=$3
# shellcheck source=deploy/netns/netns.sh
source "$src/deploy/netns/netns.sh"
if why=$(netns_missing); then echo "SKIP: $why"; exit 77; fi

logs=$work/multihost-ps-cut-logs
rm -rf "$logs"
fail() { echo "FAIL: $*"; tail -n 40 "$logs/chief.log"; exit 1; }
cut_seconds=10
steps=1500
bash "$src/deploy/netns/run-cluster.sh" --bin-dir "$bin_dir" --logs "$logs" --job mlp --steps "$steps" \
  --timeout 400 --cut ps1 --cut-seconds "$cut_seconds" -- \
  --progress_secs=1 --steps_per_closure=5 --ps_health_deadline_secs=3 ||
  fail "the run with ps1 cut off did not complete (exit status $?)"
chief_log=$logs/chief.log
lost=$(grep -E "lost ps:1 at ps1:" "$chief_log" | head -n1) || fail "the chief's log does not say that ps:1 was lost"
back=$(grep -E "ps:1 came back with its shards intact" "$chief_log" | head -n1) ||
  fail "the chief's log does not say that ps:1 came back with its shards intact"
grep -q '"global_step": '"$steps" "$chief_log" || fail "the summary does not say $steps steps"
echo "ps1 cut off for $cut_seconds s:"
echo "  ${lost:0:200}"
echo "  $back"
echo "PASS: a ps cut off the network is taken for lost and back intact; the job completes"
