#!/usr/bin/env bash
# Checkpoints lost or mixed, and paths outside the model dir: a model dir whose checkpoints all
# fail stops the chief (exit 2) naming each and the way out, touching nothing; starting over needs
# --start_over and moves the earlier run aside whole; a chief without --model_dir refuses unless
# told --ephemeral; shard paths stay inside their checkpoint; `evaluate` reads the user's data.
source "$(dirname "$0")/lib.sh" "$1"
P="$BIN/pstrain"
M="$WORK/model"
# owner.lock names the last chief that held the model dir: not part of what a refused run must leave alone.
digest() { (cd "$1" && find . -type f ! -name owner.lock -print0 | sort -z | xargs -0 sha256sum | sha256sum); }

train_linear "$M" 40
[ "$TRAIN_RC" = 0 ] || fail "training failed: $(tail -5 "$WORK/chief-0.log")"
save_pristine "$M"

# (a) Every checkpoint unusable, in several ways: exit 2, each named, nothing changed, nothing run.
corrupt() {  # corrupt CKPT HOW
  local f
  case $2 in
    truncate) for f in "$1"/*.shard; do truncate -s 3 "$f"; done ;;
    flip) for f in "$1"/*.shard; do printf '\x7f\x7f\x7f\x7f' | dd of="$f" bs=1 seek=0 conv=notrunc 2>/dev/null; done ;;
    lose) rm -f "$1"/*.shard ;;
    index) echo '{"global_step": ' >"$1/index.json" ;;
    step) sed -i 's/"global_step": *[0-9]*/"global_step": 7/' "$1/index.json" ;;
  esac
}
for how in truncate flip lose index step; do
  restore_pristine
  corrupt "$M/ckpt-20" "$how"
  corrupt "$M/ckpt-40" "$how"
  before=$(digest "$M")
  train_linear "$M" 80
  cp "$WORK/chief-0.log" "$WORK/all-bad-$how.log"
  [ "$TRAIN_RC" = 2 ] || fail "$how: the chief exited $TRAIN_RC over unusable checkpoints (want 2): $(tail -5 "$WORK/chief-0.log")"
  grep -q "holds 2 checkpoints and none can be used" "$WORK/chief-0.log" || fail "$how: no summary line"
  for c in 20 40; do grep -q "  $M/ckpt-$c: " "$WORK/chief-0.log" || fail "$how: ckpt-$c not named"; done
  grep -q -- "--start_over" "$WORK/chief-0.log" || fail "$how: no way out named"
  grep -q "created .* variables\|saved checkpoint" "$WORK/chief-0.log" && fail "$how: the chief trained anyway"
  [ "$(digest "$M")" = "$before" ] || fail "$how: the model dir changed"
  CASES=$((CASES + 1))
done

# The newest unusable, an older one fine: resume from the older; the newer is kept aside, intact.
restore_pristine
corrupt "$M/ckpt-40" flip
bad=$(digest "$M/ckpt-40")
train_linear "$M" 60
[ "$TRAIN_RC" = 0 ] || fail "resume from ckpt-20 failed: $(tail -5 "$WORK/chief-0.log")"
grep -q "resumed from $M/ckpt-20 at step 20" "$WORK/chief-0.log" || fail "did not resume from ckpt-20"
grep -q "moved the unusable checkpoint $M/ckpt-40 aside to $M/ckpt-40.unusable" "$WORK/chief-0.log" || fail "not set aside"
[ "$(digest "$M/ckpt-40.unusable")" = "$bad" ] || fail "the unusable checkpoint was changed"
[ -f "$M/ckpt-60/index.json" ] || fail "no ckpt-60"
CASES=$((CASES + 1))

# (b) --restore=false on a used model dir is refused; --start_over moves the earlier run aside.
restore_pristine
before=$(digest "$M")
train_linear "$M" 80 --restore=false
[ "$TRAIN_RC" = 2 ] || fail "--restore=false on a used model dir exited $TRAIN_RC (want 2)"
grep -q "would mix the two runs.*--start_over" "$WORK/chief-0.log" || fail "--restore=false: wrong message"
[ "$(digest "$M")" = "$before" ] || fail "--restore=false changed the model dir"
expect_exit 2 start-over-restore "--start_over and --restore=true contradict" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job=linear --model_dir="$M" --start_over --restore=true
train_linear "$M" 30 --start_over
[ "$TRAIN_RC" = 0 ] || fail "--start_over failed: $(tail -5 "$WORK/chief-0.log")"
aside=$(ls -d "$M"/previous-run-*)
[ "$(digest "$aside")" = "$before" ] || fail "the earlier run was not moved aside whole"
[ "$(ls "$M" | grep -c '^ckpt-')" = 2 ] || fail "the new run's checkpoints are not alone: $(ls "$M")"
expect_exit 0 evaluate-new "\(step 30\)" "$P" evaluate --checkpoint="$M" --job=linear
CASES=$((CASES + 1))

# (c) No model dir: refused, unless --ephemeral, which says so at start.
make_cluster 1 1
expect_exit 2 no-model-dir "no --model_dir: the job would train and keep nothing.*--ephemeral" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job=linear
expect_exit 2 ephemeral-and-dir "--ephemeral means no model dir" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job=linear --ephemeral --model_dir="$M"
start_servers 1 1 --threads=1
expect_exit 0 ephemeral "--ephemeral: NOTHING of this run is kept" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job=linear --steps=20 --ephemeral --wait_timeout_secs=30

# Paths outside the checkpoint: a shard file named ../x, /etc/passwd, or a symlink; an index symlink.
echo "outside the checkpoint" >"$WORK/secret.shard"
edit_file() {  # edit_file CKPT NEW_NAME: points every shard entry of CKPT's index at NEW_NAME
  python3 - "$1/index.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for s in d["shards"]:
    s["file"] = sys.argv[2]
json.dump(d, open(sys.argv[1], "w"))
PY
}
for name in ../../secret.shard /etc/passwd ..; do
  restore_pristine
  edit_file "$M/ckpt-40" "$name"
  expect_exit 2 "inspect-file-$CASES" "ckpt-40/index.json: .*only a plain file name" "$P" inspect --checkpoint="$M/ckpt-40"
  expect_exit 2 "evaluate-file-$CASES" "only a plain file name" "$P" evaluate --checkpoint="$M/ckpt-40" --job=linear
done
restore_pristine
for f in "$M"/ckpt-40/*.shard; do mv "$f" "$WORK/$(basename "$f")"; ln -s "$WORK/$(basename "$f")" "$f"; done
expect_exit 2 inspect-symlink "is a symlink; it is not followed" "$P" inspect --checkpoint="$M/ckpt-40"
expect_exit 0 evaluate-symlink "ignoring checkpoint $M/ckpt-40: .*is a symlink" "$P" evaluate --checkpoint="$M" --job=linear
grep -q "ckpt-20 (step 20): test loss" "$WORK/evaluate-symlink.log" || fail "evaluate did not fall back to ckpt-20"
restore_pristine
mv "$M/ckpt-40/index.json" "$WORK/index.json" && ln -s "$WORK/index.json" "$M/ckpt-40/index.json"
expect_exit 2 inspect-index-symlink "index.json is a symlink" "$P" inspect --checkpoint="$M/ckpt-40"

# `evaluate` reads the data of its flags or the user's job spec; the checkpoint's own is only a
# default, printed before it is read.
restore_pristine
python3 - "$M/ckpt-40/index.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["job_spec"]["data"] = {"dataset": "csv", "train_file": "/etc/hosts", "test_file": "/etc/hostname"}
json.dump(d, open(sys.argv[1], "w"))
PY
expect_exit 0 evaluate-users-data "ckpt-40 \(step 40\): test loss" "$P" evaluate --checkpoint="$M/ckpt-40" --job=linear
grep -q "/etc/hostname" "$WORK/evaluate-users-data.log" && fail "evaluate --job named the checkpoint's data"
expect_exit 2 evaluate-default-data "test data from the checkpoint's job spec: csv file /etc/hostname \(give --job" \
  "$P" evaluate --checkpoint="$M/ckpt-40"
echo "PASS: $CASES cases: unusable checkpoints stop the job untouched, runs never mix, paths stay inside"
