#!/usr/bin/env bash
# TensorBoard event files of a real run (1 ps, 2 workers, the chief, the evaluator sidecar), read
# back by tensorboard/read_events.py: its own CRC32C and its own copy of TensorFlow's Event and
# Summary messages (compiled with protoc --python_out, read with Debian's python3-protobuf). Every
# CRC must be right, each file must start with its file_version, and the scalars must equal
# metrics.jsonl. Then real TensorBoard (PyPI `tensorboard`, in the cache's virtual environment,
# installed on first use) loads the runs with its EventAccumulator: its scalars and steps must equal
# metrics.jsonl too, and a changed value must be caught. A flipped byte must be caught. When PyPI
# cannot be reached, everything else runs and the test then skips (exit 77), naming the install
# command (bash deploy/install-python-peers.sh tools).
#   tensorboard_events_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3  # Debian's python, where python3-protobuf lives
"$PY" -c 'import google.protobuf' 2>/dev/null || fail "python3-protobuf is missing (bash deploy/install-deps.sh)"
mkdir -p "$WORK/py"
protoc --proto_path="$HERE/tensorboard" --python_out="$WORK/py" "$HERE/tensorboard/event.proto"

make_cluster 1 2
start_servers 1 2 --threads=1
MODEL=$WORK/model
start chief 0 pstrain-chief --job=mlp --steps=150 --eval_every_steps=50 --checkpoint_every_steps=50 \
  --progress_secs=1 --model_dir="$MODEL"
CHIEF_PID=$LAST_PID
TF_CONFIG="{\"cluster\":$CLUSTER,\"task\":{\"type\":\"evaluator\",\"index\":0}}" \
  "$BIN/pstrain-chief" --job=mlp --steps=150 --model_dir="$MODEL" --eval_poll_secs=1 >"$WORK/evaluator-0.log" 2>&1 &
EVAL_PID=$!
PIDS+=("$EVAL_PID")
wait_pid "$CHIEF_PID" 180
[ "$WAIT_RC" = 0 ] || fail "the chief exited $WAIT_RC"
wait_pid "$EVAL_PID" 120
[ "$WAIT_RC" = 0 ] || fail "the evaluator exited $WAIT_RC"

ls "$MODEL"/train/events.out.tfevents.* "$MODEL"/eval/events.out.tfevents.* >/dev/null \
  || fail "no event files in $MODEL/train and $MODEL/eval"
"$PY" "$HERE/tensorboard/read_events.py" "$MODEL" "$WORK/py" || fail "the event files do not read back"

# Real TensorBoard reads the same runs; a metrics.jsonl value it does not show must be caught.
source "$HERE/pypi_venv.sh"
TB_SKIP=""
if TB_PY=$(pypi_python tools); then
  "$TB_PY" "$HERE/tensorboard/check_with_tensorboard.py" "$MODEL" || fail "TensorBoard does not read back metrics.jsonl"
  cp "$MODEL/metrics.jsonl" "$WORK/metrics.jsonl.orig"
  "$PY" - "$MODEL/metrics.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
rec = next(r for r in lines if isinstance(r.get("loss"), float))
rec["loss"] += 0.25
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in lines))
PY
  if out=$("$TB_PY" "$HERE/tensorboard/check_with_tensorboard.py" "$MODEL"); then
    fail "TensorBoard check accepted a changed loss: $out"
  fi
  grep -q "differ from metrics.jsonl" <<<"$out" || fail "unexpected message for a changed loss: $out"
  echo "a changed loss is caught: $out"
  cp "$WORK/metrics.jsonl.orig" "$MODEL/metrics.jsonl"
else
  TB_SKIP="real TensorBoard was not run: install its environment with bash deploy/install-python-peers.sh tools"
fi

# The reader must catch a corrupted byte.
f=$(ls "$MODEL"/train/events.out.tfevents.* | head -n1)
printf '\x55' | dd of="$f" bs=1 seek=40 conv=notrunc status=none
if out=$("$PY" "$HERE/tensorboard/read_events.py" "$MODEL" "$WORK/py"); then
  fail "a corrupted event file was accepted: $out"
fi
grep -q "bad .*CRC" <<<"$out" || fail "unexpected message for a corrupted file: $out"
echo "a flipped byte is caught: $out"
if [ -n "$TB_SKIP" ]; then
  echo "SKIP: every other check passed; $TB_SKIP"
  exit 77
fi
echo PASS
