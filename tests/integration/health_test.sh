#!/usr/bin/env bash
# `pstrain health HOST:PORT` against real tasks: exit 0 and SERVING for a ps, a worker and the
# chief; non-zero with a message for an unknown service, a port nobody serves and a stopped task;
# exit 2 for a malformed address.
#   health_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
make_cluster 1 1
start_servers 1 1 --threads=1
PS_PID=${PIDS[0]}
start chief 0 pstrain-chief --job=mlp --steps=100000 --model_dir="$WORK/model"
CHIEF_PID=$LAST_PID

# health ARGS...: runs the probe, sets RC and OUT (stdout and stderr).
health() { set +e; OUT=$("$BIN/pstrain" health "$@" 2>&1); RC=$?; set -e; }
for port in "${PS_PORTS[0]}" "${WORKER_PORTS[0]}" "$CHIEF_PORT"; do
  for ((i = 0; i < 100; i++)); do health "127.0.0.1:$port" --timeout_secs=2; [ "$RC" = 0 ] && break; sleep 0.2; done
  [ "$RC" = 0 ] && [ "$OUT" = "127.0.0.1:$port: SERVING" ] || fail "127.0.0.1:$port: exit $RC: $OUT"
done
health "127.0.0.1:${PS_PORTS[0]}" --service=pstrain.PsService
[ "$RC" = 0 ] || fail "pstrain.PsService is not SERVING: $OUT"
health "127.0.0.1:${PS_PORTS[0]}" --service=no.Such
[ "$RC" = 1 ] && grep -q "health check of 127.0.0.1:${PS_PORTS[0]} failed" <<<"$OUT" || fail "unknown service: $RC $OUT"
read -r nobody <<<"$(free_ports 1)"
health "127.0.0.1:$nobody" --timeout_secs=2
[ "$RC" = 1 ] && grep -q "127.0.0.1:$nobody" <<<"$OUT" || fail "a port nobody serves: exit $RC: $OUT"
health "no-port-here"
[ "$RC" = 2 ] && grep -q "no port" <<<"$OUT" || fail "a malformed address: exit $RC: $OUT"
kill -TERM "$CHIEF_PID"
wait_pid "$CHIEF_PID" 60
kill -TERM "$PS_PID"
wait_pid "$PS_PID" 30
health "127.0.0.1:${PS_PORTS[0]}" --timeout_secs=2
[ "$RC" != 0 ] || fail "a stopped ps answered SERVING"
echo "stopped ps: exit $RC: $OUT"
echo PASS
