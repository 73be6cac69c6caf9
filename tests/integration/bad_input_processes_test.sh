#!/usr/bin/env bash
# Processes, flags and the ps's port: a task whose port is taken says so (no segfault); every task
# binary exits 2 on a bad flag; the chief refuses negative --steps/--epochs and unknown job keys
# (naming the nearest) and binds --listen; peers that announce more than they send on the ps's port
# cannot grow the ps.
source "$(dirname "$0")/lib.sh" "$1"
P="$BIN/pstrain"
make_cluster 1 1

# Ports in use: the address is named, exit 1 (runtime), never a crash.
python3 - "$WORKER_PORTS" "$PS_PORTS" "$CHIEF_PORT" >"$WORK/holder.log" 2>&1 <<'PY' &
import socket, sys, time
held = []
for p in sys.argv[1:]:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(p))); s.listen(); held.append(s)
print("holding", flush=True)
time.sleep(120)
PY
PIDS+=($!)
wait_for_line "$WORK/holder.log" holding 30
expect_exit 1 worker-port-taken "worker:0: cannot listen on 0.0.0.0:${WORKER_PORTS[0]}" \
  env TF_CONFIG="$(tf_config worker 0)" "$BIN/pstrain-worker"
expect_exit 1 ps-port-taken "cannot listen on 0.0.0.0:${PS_PORTS[0]}.*in use" env TF_CONFIG="$(tf_config ps 0)" "$BIN/pstrain-ps"
expect_exit 1 chief-port-taken "cannot serve the chief status service on 0.0.0.0:$CHIEF_PORT" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job=linear --model_dir="$WORK/m" --wait_timeout_secs=1
kill "${PIDS[-1]}"

# Bad flags: exit 2 from every binary, the flag named; --help exits 0.
for role in chief worker ps; do
  expect_exit 2 "$role-unknown" "unknown flag \"--bogus\"" env TF_CONFIG="$(tf_config "$role" 0)" "$BIN/pstrain-$role" --bogus
  expect_exit 2 "$role-typo" "did you mean --listen\?" env TF_CONFIG="$(tf_config "$role" 0)" "$BIN/pstrain-$role" --lisen=x
  expect_exit 2 "$role-positional" "unexpected argument \"extra\"" env TF_CONFIG="$(tf_config "$role" 0)" \
    "$BIN/pstrain-$role" extra
  expect_exit 2 "$role-missing-value" "flag --tf_config needs a value" "$BIN/pstrain-$role" --tf_config
  expect_exit 0 "$role-help" "--listen" "$BIN/pstrain-$role" --help
done
expect_exit 2 worker-threads-value "flag --threads=\"many\" is not a valid value" \
  env TF_CONFIG="$(tf_config worker 0)" "$BIN/pstrain-worker" --threads=many
expect_exit 2 worker-threads-range "--threads must be at most 1024" env TF_CONFIG="$(tf_config worker 0)" \
  "$BIN/pstrain-worker" --threads=100000
expect_exit 2 worker-replicas "--replicas must be positive" env TF_CONFIG="$(tf_config worker 0)" \
  "$BIN/pstrain-worker" --replicas=0
expect_exit 2 train-typo "unknown flag --thread for \`pstrain train\`; did you mean --threads\?" "$P" train --thread=2

# The chief's overrides are range-checked, never ignored.
for flag in --steps=-5 --epochs=-1 --steps=0 --steps_per_closure=-1 --eval_every_steps=-3 --checkpoint_every_secs=-1 \
            --wait_timeout_secs=0; do
  name=${flag%%=*}
  expect_exit 2 "chief$flag" "$name must (be positive|not be negative)" env TF_CONFIG="$(tf_config chief 0)" \
    "$BIN/pstrain-chief" --job=linear --model_dir="$WORK/m" "$flag"
done
expect_exit 2 chief-both "give --epochs or --steps, not both" env TF_CONFIG="$(tf_config chief 0)" \
  "$BIN/pstrain-chief" --job=linear --model_dir="$WORK/m" --steps=5 --epochs=1

# Unknown job-spec keys: refused everywhere, naming the nearest known key.
write_job "$WORK/optimiser.json" '{"model": {"input_shape": [2], "loss": "mse", "layers": [{"type": "dense", "units": 1}]},
  "optimiser": {"type": "adam"}, "data": {"dataset": "synthetic_linear", "num_examples": 64}, "schedule": {"steps": 5}}'
write_job "$WORK/units.json" '{"model": {"input_shape": [2], "loss": "mse", "layers": [{"type": "dense", "unit": 1}]},
  "data": {"dataset": "synthetic_linear", "num_examples": 64}, "schedule": {"steps": 5}}'
expect_exit 2 chief-optimiser "unknown key \"optimiser\" in the top level; did you mean \"optimizer\"\?" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job="$WORK/optimiser.json" --model_dir="$WORK/m"
expect_exit 2 train-optimiser "did you mean \"optimizer\"\?" "$P" train --job="$WORK/optimiser.json"
expect_exit 2 plan-unit "unknown key \"unit\" in model.layers\[0\]; did you mean \"units\"\?" \
  "$P" plan --job="$WORK/units.json" --num_ps=1

# --listen: the chief binds the address given (here loopback only), not every interface.
start_servers 1 1 --threads=1
LISTEN_PORT=$(free_ports 1)
start chief 0 pstrain-chief --job=linear --steps=400 --steps_per_closure=1 --model_dir="$WORK/listen" \
  --listen="127.0.0.1:$LISTEN_PORT" --wait_timeout_secs=30
CHIEF=$LAST_PID
wait_for_line "$WORK/chief-0.log" "configured 1 workers" 60
python3 - "$LISTEN_PORT" <<'PY' || fail "the chief does not listen on 127.0.0.1:$LISTEN_PORT only"
import sys
port = "%04X" % int(sys.argv[1])
listening = [l.split()[1] for l in open("/proc/net/tcp").read().splitlines()[1:] + open("/proc/net/tcp6").read().splitlines()[1:]
             if l.split()[1].endswith(":" + port) and l.split()[3] == "0A"]
loopback = {"0100007F:" + port, "0000000000000000FFFF00000100007F:" + port}  # IPv4, or IPv4 mapped into IPv6
sys.exit(0 if listening and set(listening) <= loopback else 1)
PY
CASES=$((CASES + 1))
wait_pid "$CHIEF" 120
[ "$WAIT_RC" = 0 ] || fail "the chief with --listen exited $WAIT_RC"

# The ps's port: 40 connections announcing 16 MiB messages and sending little, then 8 sending
# whole 16 MiB messages slowly: the ps grows by little, closes those beyond the bound, and serves on.
make_cluster 1 1
start ps 0 pstrain-ps
PS=$LAST_PID
wait_for_line "$WORK/ps-0.log" "serving on" 30
python3 - "${PS_PORTS[0]}" "$PS" >"$WORK/flood.log" 2>&1 <<'PY' || fail "the ps grew or failed under announced-but-unsent bytes: $(cat "$WORK/flood.log")"
import socket, struct, sys, threading, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
def rss():
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
def header(message_bytes):  # magic "PSTF", message size, payload size
    return struct.pack("<IIQ", 0x46545350, message_bytes, 0)
before = rss()
stalled = []
for _ in range(40):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"PSTRNTC1" + header(16 << 20) + b"\x0a" * 1024)
    stalled.append(s)
time.sleep(1)
grown = rss() - before
print("40 stalled connections: ps grew by %.1f MiB" % (grown / 2**20))
if grown > 32 << 20:
    sys.exit(1)
closed = []
def deliver(i):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"PSTRNTC1" + header(16 << 20))
    piece = b"\x0a" * (1 << 20)
    try:
        for _ in range(16):
            s.sendall(piece)
            time.sleep(0.05)
        s.settimeout(30)
        closed.append(s.recv(1) == b"")
    except OSError:
        closed.append(True)
threads = [threading.Thread(target=deliver, args=(i,)) for i in range(8)]
for t in threads: t.start()
peak = 0
while any(t.is_alive() for t in threads):
    peak = max(peak, rss() - before)
    time.sleep(0.05)
print("8 connections delivering 16 MiB messages: ps grew by at most %.1f MiB; %d of 8 closed by the ps" % (peak / 2**20, sum(closed)))
if peak > 160 << 20:
    sys.exit(1)
for s in stalled: s.close()
PY
cat "$WORK/flood.log"
CASES=$((CASES + 2))
kill -0 "$PS" || fail "the ps died under the flood"
start worker 0 pstrain-worker --threads=1
expect_exit 0 after-flood '"state": "done"' env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job=linear \
  --steps=40 --model_dir="$WORK/after-flood" --wait_timeout_secs=30
echo "PASS: $CASES cases: ports, flags, overrides, unknown keys, --listen and the ps's port"
