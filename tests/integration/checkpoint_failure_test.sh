#!/usr/bin/env bash
# A full disk does not end the job: the model dir is a small tmpfs (in a mount namespace of the
# test's own); after the first checkpoint the test fills it, the chief warns that the next
# checkpoint could not be written (path and reason), keeps the older one intact and leaves nothing
# half-written; once the disk has room again the job completes with exit 0 and a final checkpoint.
# The chief is paused (SIGSTOP) while the test looks or changes the disk, so the run's speed does
# not matter. Skips (77) when no mount namespace can be made here.
#   checkpoint_failure_test.sh BIN_DIR
if [ "${PSTRAIN_IN_MOUNT_NS:-}" != 1 ]; then
  for flags in -m -rm; do  # as root, or as a user mapped to root in a user namespace
    if unshare "$flags" true 2>/dev/null; then PSTRAIN_IN_MOUNT_NS=1 exec unshare "$flags" bash "$0" "$@"; fi
  done
  echo "SKIP: cannot make a mount namespace here (unshare -m and -rm fail), so no tmpfs to fill"
  exit 77
fi
source "$(dirname "$0")/lib.sh" "$1"
DISK=$WORK/disk
mkdir -p "$DISK"
mount -t tmpfs -o size=4m tmpfs "$DISK" || { echo "SKIP: cannot mount a tmpfs in the mount namespace"; exit 77; }
trap 'umount -l "$DISK" 2>/dev/null || true; cleanup' EXIT
MODEL=$DISK/model

make_cluster 1 1
start_servers 1 1 --threads=1
start chief 0 pstrain-chief --job=linear --steps=4000 --steps_per_closure=1 --eval_every_steps=1000 \
  --checkpoint_every_secs=1 --model_dir="$MODEL" --wait_timeout_secs=30 --progress_secs=1
CHIEF=$LAST_PID

wait_for_line "$WORK/chief-0.log" "saved checkpoint " 120
kill -STOP "$CHIEF"
# Fill the disk: big blocks, then small ones, until nothing more fits.
dd if=/dev/zero of="$DISK/filler" bs=64k status=none 2>/dev/null || true
dd if=/dev/zero of="$DISK/filler2" bs=1k status=none 2>/dev/null || true
kill -CONT "$CHIEF"

wait_for_line "$WORK/chief-0.log" "WARNING: the checkpoint .* could not be written" 60
kill -STOP "$CHIEF"
line=$(grep -m1 "WARNING: the checkpoint" "$WORK/chief-0.log")
grep -Eq "WARNING: the checkpoint $MODEL/ckpt-[0-9]+ could not be written \(failure 1 of at most 3 in a row; the newest, .*ckpt-[0-9]+, is kept\); training goes on .*: .*(No space left on device|space)" <<<"$line" \
  || fail "the warning does not name the path, the newest checkpoint and the reason: $line"
kill -0 "$CHIEF" 2>/dev/null || fail "the chief exited at the failed checkpoint"
half=$(find "$MODEL" -name '*.tmp[-.]*')
[ -z "$half" ] || fail "half-written files were left: $half"
newest=$MODEL/$(ls "$MODEL" | grep -E '^ckpt-[0-9]+$' | sort -t- -k2 -n | tail -n1)
"$BIN/pstrain" inspect --checkpoint="$newest" >"$WORK/inspect.log" 2>&1 \
  || fail "the checkpoint kept, $newest, does not verify: $(cat "$WORK/inspect.log")"
grep -q "$newest" <<<"$line" || fail "the warning names another checkpoint than $newest: $line"
rm -f "$DISK/filler" "$DISK/filler2"
kill -CONT "$CHIEF"

wait_pid "$CHIEF" 180
[ "$WAIT_RC" = 0 ] || fail "the chief exited $WAIT_RC after the disk had room again"
grep -q '"state": "done"' "$WORK/chief-0.log" || fail "the chief's summary does not say done"
grep -q "saved checkpoint $MODEL/ckpt-4000" "$WORK/chief-0.log" || fail "no final checkpoint at step 4000"
half=$(find "$MODEL" -name '*.tmp[-.]*')
[ -z "$half" ] || fail "half-written files were left: $half"
"$BIN/pstrain" inspect --checkpoint="$MODEL/ckpt-4000" >"$WORK/inspect.log" 2>&1 \
  || fail "the final checkpoint does not verify: $(cat "$WORK/inspect.log")"
echo "PASS: a checkpoint on a full disk was warned about ($line); the job went on and completed"
