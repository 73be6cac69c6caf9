#!/usr/bin/env bash
# ctest supervise: deploy/local/supervise.sh restarts a task that died, at most --max_restarts
# times with a log line each, stops restarting once the task exits 0, and passes SIGTERM to the
# task (and exits with its status, without a restart). A task that exits 2 (bad configuration) is
# never restarted, and out-of-range numbers are refused before the task runs.
#   supervise_test.sh SOURCE_DIR
set -euo pipefail
S="$1/deploy/local/supervise.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Always failing: 1 run + 2 restarts, then the task's status.
rc=0
bash "$S" --max_restarts=2 --delay_secs=0 --name t -- bash -c "echo run >>$work/runs; exit 3" 2>"$work/log1" || rc=$?
[ "$rc" = 3 ] || fail "exit $rc, expected the task's 3"
[ "$(wc -l <"$work/runs")" = 3 ] || fail "ran $(wc -l <"$work/runs") times, expected 3"
[ "$(grep -c "t: exited with status 3; restart [12] of 2" "$work/log1")" = 2 ] || fail "no line per restart: $(cat "$work/log1")"
grep -q "not restarting" "$work/log1" || fail "the last failure is not named: $(cat "$work/log1")"

# Fails once, then succeeds: restarted once, exit 0.
rm -f "$work/runs"
bash "$S" --delay_secs=0 -- bash -c "echo run >>$work/runs; [ \$(wc -l <$work/runs) = 2 ]" 2>"$work/log2" ||
  fail "a task that exits 0 on its second run: the supervisor exited $?"
[ "$(wc -l <"$work/runs")" = 2 ] || fail "ran $(wc -l <"$work/runs") times, expected 2"

# SIGTERM goes to the task; the supervisor exits with the task's status and does not restart it.
rm -f "$work/runs"
bash "$S" --delay_secs=0 -- bash -c "trap 'echo term >$work/term; kill \$s; exit 7' TERM; echo run >>$work/runs; sleep 30 & s=\$!; wait" \
  2>"$work/log3" &
sup=$!
for _ in $(seq 1 100); do [ -s "$work/runs" ] && break; sleep 0.05; done
kill -TERM "$sup"
rc=0
wait "$sup" || rc=$?
[ "$rc" = 7 ] || fail "exit $rc after SIGTERM, expected the task's 7"
[ -f "$work/term" ] || fail "the task did not get SIGTERM"
[ "$(wc -l <"$work/runs")" = 1 ] || fail "the task was restarted after SIGTERM"
# Exit 2 is bad configuration: restarting cannot help, the supervisor stops at once.
rm -f "$work/runs"
rc=0
timeout 20 bash "$S" --max_restarts=5 --delay_secs=0 --name t -- bash -c "echo run >>$work/runs; exit 2" 2>"$work/log4" || rc=$?
[ "$rc" = 2 ] || fail "exit $rc for a task that exits 2, expected 2"
[ "$(wc -l <"$work/runs")" = 1 ] || fail "a task that exited 2 (bad configuration) ran $(wc -l <"$work/runs") times"
grep -q "bad configuration" "$work/log4" || fail "the supervisor did not say why it stopped: $(cat "$work/log4")"

# Numbers out of range are refused (exit 2) before the task runs; a huge --max_restarts used to
# overflow bash's integers and restart without end.
for bad in --max_restarts=99999999999999999999999 --max_restarts=1001 --max_restarts=-1 --delay_secs=1e9 \
           --delay_secs=3601 --delay_secs=abc; do
  rm -f "$work/runs"
  other=--delay_secs=0
  case "$bad" in --delay_secs*) other=--max_restarts=0 ;; esac
  rc=0
  timeout 20 bash "$S" "$other" "$bad" -- bash -c "echo run >>$work/runs; exit 3" 2>"$work/log5" || rc=$?
  [ "$rc" = 2 ] || fail "$bad: exit $rc, expected 2 (refused)"
  [ ! -e "$work/runs" ] || fail "$bad: the task ran although the flag is out of range"
  grep -q "must be" "$work/log5" || fail "$bad: no message naming the range: $(cat "$work/log5")"
done

echo "PASS: supervise.sh restarts a failed task (bounded, one line each), stops on exit 0 and exit 2, refuses out-of-range numbers, passes SIGTERM"
