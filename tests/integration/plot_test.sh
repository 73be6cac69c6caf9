#!/usr/bin/env bash
# `pstrain plot` over two real runs (async and sync, 1 ps, 2 workers, mlp): the SVG is rendered by
# a real renderer (rsvg-convert, Debian librsvg2-bin) to a PNG that must have the SVG's size, not
# be blank, and show both runs' colours (png_check.py decodes it); `--out FILE.png` renders the
# same. Bad arguments exit 2 with a message. A short run with the default progress interval still
# records at least 20 training points (drawn as such), and a run of several epochs evaluates the
# test set after each one.
#   plot_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
HERE=$(cd "$(dirname "$0")" && pwd)
command -v rsvg-convert >/dev/null || fail "rsvg-convert is missing: bash deploy/install-deps.sh installs librsvg2-bin"

for mode in async sync; do
  make_cluster 1 2
  start_servers 1 2 --threads=1
  start chief 0 pstrain-chief --job=mlp --steps=120 --eval_every_steps=40 --progress_secs=1 --mode="$mode" \
    --model_dir="$WORK/$mode/model"
  wait_pid "$LAST_PID" 180
  [ "$WAIT_RC" = 0 ] || fail "the $mode run exited $WAIT_RC"
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
done

"$BIN/pstrain" plot "$WORK/async" "$WORK/sync/model" --out="$WORK/curves.svg" || fail "pstrain plot failed"
size=$(python3 -c 'import re,sys; m=re.search(r"<svg[^>]* width=\"(\d+)\" height=\"(\d+)\"", open(sys.argv[1]).read()); print(m.group(1), m.group(2))' "$WORK/curves.svg")
read -r width height <<<"$size"
grep -q '>async<' "$WORK/curves.svg" && grep -q '>sync<' "$WORK/curves.svg" || fail "the legend does not name both runs"
rsvg-convert -o "$WORK/rendered.png" "$WORK/curves.svg" || fail "rsvg-convert cannot render the SVG"
python3 "$HERE/png_check.py" "$WORK/rendered.png" "$width" "$height" '#1f77b4' '#d62728' || fail "bad rendering"
"$BIN/pstrain" plot "$WORK/async" --out="$WORK/one.png" || fail "pstrain plot --out=FILE.png failed"
python3 "$HERE/png_check.py" "$WORK/one.png" "$width" "$(python3 -c "print($height - 24)")" '#1f77b4' \
  || fail "bad --out=FILE.png"

# A short run (200 steps, a few seconds) at the default --progress_secs: at least 20 training
# records in metrics.jsonl at 20 or more different steps, and the plot's loss curve draws them.
make_cluster 1 2
start_servers 1 2 --threads=1
start chief 0 pstrain-chief --job=mlp --steps=200 --model_dir="$WORK/short/model"
wait_pid "$LAST_PID" 180
[ "$WAIT_RC" = 0 ] || fail "the short run exited $WAIT_RC"
read -r records steps lines <<<"$(python3 - "$WORK/short/model/metrics.jsonl" "$WORK/chief-0.log" <<'PY'
import json, re, sys
train = [r for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "train" and r.get("loss") is not None]
lines = [l for l in open(sys.argv[2]) if re.search(r"\] step \d+/\d+ ", l)]
print(len(train), len({r["step"] for r in train}), len(lines))
PY
)"
[ "$steps" -ge 20 ] || fail "a 200-step run recorded $records training points at $steps different steps (want 20 or more)"
"$BIN/pstrain" plot "$WORK/short" --out="$WORK/short.svg" || fail "pstrain plot of the short run failed"
drawn=$(python3 -c 'import re,sys; print(max(len(p.split()) for p in re.findall(r"<polyline points=\"([^\"]*)\"", open(sys.argv[1]).read())))' "$WORK/short.svg")
[ "$drawn" -ge 20 ] || fail "the short run's plot draws $drawn points on its longest curve (want 20 or more)"
echo "short run: $records training records (the terminal had $lines progress lines); $drawn points drawn"

# No eval_every_steps in the schedule: the test set after every epoch (linear: 64 steps an epoch).
make_cluster 1 1
start_servers 1 1 --threads=1
start chief 0 pstrain-chief --job=linear --epochs=3 --model_dir="$WORK/epochs/model"
wait_pid "$LAST_PID" 120
[ "$WAIT_RC" = 0 ] || fail "the 3-epoch run exited $WAIT_RC"
evals=$(python3 -c 'import json,sys; print(" ".join(str(r["step"]) for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "eval"))' \
  "$WORK/epochs/model/metrics.jsonl")
[ "$evals" = "64 128 192" ] || fail "a 3-epoch run evaluated at steps '$evals' (want 64 128 192)"

# Bad arguments: exit 2, a message naming the problem.
set +e
out=$("$BIN/pstrain" plot "$WORK/no-such-run" --out="$WORK/x.svg" 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && grep -q "no metrics.jsonl in" <<<"$out" || fail "a missing run: exit $rc, $out"
set +e
out=$("$BIN/pstrain" plot "$WORK/async" --out="$WORK/x.txt" 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && grep -q "must end in .svg or .png" <<<"$out" || fail "a bad --out: exit $rc, $out"
echo PASS
