#!/usr/bin/env bash
# Debian's real Prometheus server scrapes a short local cluster (2 ps, 2 workers, the chief, the
# evaluator sidecar), each task serving --metrics_port on 127.0.0.1: every target must be up, the
# server's HTTP API must return pstrain's global-step and ps-bytes series, non-empty and increasing,
# and `promtool check metrics` must accept every task's /metrics.
#   prometheus_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
for tool in prometheus promtool; do
  command -v "$tool" >/dev/null || fail "$tool is missing: bash deploy/install-deps.sh installs Debian's prometheus"
done

make_cluster 2 2
read -r -a MP <<<"$(free_ports 7)"  # ps0 ps1 worker0 worker1 chief evaluator prometheus
NAMES=(ps-0 ps-1 worker-0 worker-1 chief-0 evaluator-0)
MODEL=$WORK/model
start ps 0 pstrain-ps --listen="127.0.0.1:${PS_PORTS[0]}" --metrics_port="${MP[0]}"
start ps 1 pstrain-ps --listen="127.0.0.1:${PS_PORTS[1]}" --metrics_port="${MP[1]}"
start worker 0 pstrain-worker --threads=1 --listen="127.0.0.1:${WORKER_PORTS[0]}" --metrics_port="${MP[2]}"
start worker 1 pstrain-worker --threads=1 --listen="127.0.0.1:${WORKER_PORTS[1]}" --metrics_port="${MP[3]}"
# Far more steps than the test waits for: the chief is stopped (SIGTERM) once Prometheus has seen
# the series grow.
start chief 0 pstrain-chief --job=mlp --steps=1000000 --model_dir="$MODEL" --progress_secs=1 \
  --checkpoint_every_steps=200 --eval_every_steps=0 --metrics_port="${MP[4]}"
CHIEF_PID=$LAST_PID
TF_CONFIG="{\"cluster\":$CLUSTER,\"task\":{\"type\":\"evaluator\",\"index\":0}}" \
  "$BIN/pstrain-chief" --job=mlp --steps=1000000 --model_dir="$MODEL" --eval_poll_secs=1 --metrics_port="${MP[5]}" \
  >"$WORK/evaluator-0.log" 2>&1 &
PIDS+=("$!")

targets=""
for i in 0 1 2 3 4 5; do targets+="${targets:+, }'127.0.0.1:${MP[$i]}'"; done
cat >"$WORK/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: pstrain
    static_configs:
      - targets: [$targets]
EOF
promtool check config "$WORK/prometheus.yml" >/dev/null || fail "promtool rejects the test's own config"
PROM=127.0.0.1:${MP[6]}
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" --web.listen-address="$PROM" \
  --log.level=warn >"$WORK/prometheus.log" 2>&1 &
PIDS+=("$!")

# Everything below asks Prometheus's HTTP API; prom.py prints what it found or why it failed.
cat >"$WORK/prom.py" <<'PY'
import json, sys, time, urllib.parse, urllib.request
base, what = sys.argv[1], sys.argv[2]

def api(path, **params):
    url = "http://%s/api/v1/%s?%s" % (base, path, urllib.parse.urlencode(params))
    with urllib.request.urlopen(url, timeout=5) as r:
        d = json.load(r)
    if d.get("status") != "success":
        raise SystemExit("%s: %s" % (url, d))
    return d["data"]

if what == "targets_up":  # every target scraped with up == 1
    want = int(sys.argv[3])
    up = [r for r in api("query", query="up")["result"] if r["value"][1] == "1"]
    print(len(up))
    sys.exit(0 if len(up) == want else 1)
if what == "increasing":  # QUERY MIN_POINTS: the range of the last minute grows
    query, min_points = sys.argv[3], int(sys.argv[4])
    now = time.time()
    result = api("query_range", query=query, start=now - 60, end=now, step="1")["result"]
    if not result:
        print("no series for %s" % query); sys.exit(1)
    values = [float(v) for _, v in result[0]["values"]]
    ok = (len(values) >= min_points and all(b >= a for a, b in zip(values, values[1:]))
          and values[-1] > values[0])
    print("%s: %d points, %s -> %s" % (query, len(values), values[0] if values else None,
                                       values[-1] if values else None))
    sys.exit(0 if ok else 1)
if what == "ready":
    try:
        urllib.request.urlopen("http://%s/-/ready" % base, timeout=2); sys.exit(0)
    except Exception:
        sys.exit(1)
PY
prom() { python3 "$WORK/prom.py" "$PROM" "$@"; }

for ((i = 0; i < 300; i++)); do prom ready && break; sleep 0.1; done
prom ready || fail "prometheus did not become ready in 30 s"
for ((i = 0; i < 300; i++)); do n=$(prom targets_up 6) && break; sleep 0.1; done
prom targets_up 6 >/dev/null || fail "not every task is up in Prometheus after 30 s ($n of 6)"
echo "prometheus scrapes 6 targets, all up"

# Wait (bounded) until both series have grown over at least 5 scrapes. The global step is the
# chief's alone: it must be the only task that has one (the evaluator does not train).
STEP="pstrain_global_step{instance=\"127.0.0.1:${MP[4]}\"}"
n=$(python3 -c 'import json,sys,urllib.request,urllib.parse; print(len(json.load(urllib.request.urlopen("http://%s/api/v1/series?%s" % (sys.argv[1], urllib.parse.urlencode({"match[]": "pstrain_global_step"}))))["data"]))' "$PROM")
[ "$n" = 1 ] || fail "$n tasks have a pstrain_global_step series; only the chief should"
step_ok="" bytes_ok=""
for ((i = 0; i < 120; i++)); do
  step_ok=$(prom increasing "$STEP" 5) && bytes_ok=$(prom increasing 'sum(pstrain_ps_pulled_bytes_total)' 5) \
    && pushed_ok=$(prom increasing 'sum(pstrain_ps_pushed_bytes_total)' 5) && break
  step_ok="" bytes_ok=""
  sleep 0.5
done
[ -n "$step_ok" ] && [ -n "$bytes_ok" ] || fail "the step or ps-bytes series did not grow within 60 s: \
$(prom increasing "$STEP" 5); $(prom increasing 'sum(pstrain_ps_pulled_bytes_total)' 5)"
echo "$step_ok"
echo "$bytes_ok"
echo "$pushed_ok"

# promtool on every task's own output (the evaluator's once it has evaluated a checkpoint).
wait_for_line "$WORK/evaluator-0.log" "ckpt-[0-9]+: test loss" 60
for i in 0 1 2 3 4 5; do
  python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())" \
    "http://127.0.0.1:${MP[$i]}/metrics" >"$WORK/${NAMES[$i]}.metrics" || fail "cannot read ${NAMES[$i]}'s /metrics"
  promtool check metrics <"$WORK/${NAMES[$i]}.metrics" || fail "promtool check metrics rejects ${NAMES[$i]}'s output"
done
grep -q '^pstrain_ps_pulls_total{shard="' "$WORK/ps-0.metrics" || fail "ps-0 has no per-shard pulls"
grep -q '^process_resident_memory_bytes [1-9]' "$WORK/worker-1.metrics" || fail "worker-1 has no RSS"
grep -q '^pstrain_staleness_steps_bucket{worker="worker:1",le="+Inf"} [1-9]' "$WORK/chief-0.metrics" \
  || fail "the chief has no staleness histogram for worker:1"
grep -q '^pstrain_ps_client_request_duration_seconds_count{ps="ps:1",method="Push"} [1-9]' "$WORK/worker-0.metrics" \
  || fail "worker-0 has no push latency to ps:1"
grep -q '^pstrain_eval_accuracy 0\.[0-9]' "$WORK/evaluator-0.metrics" || fail "the evaluator has no accuracy"
grep -q '^pstrain_checkpoint_size_bytes [1-9]' "$WORK/chief-0.metrics" || fail "the chief has no checkpoint size"
curl_404=$(python3 - "http://127.0.0.1:${MP[0]}/other" <<'PY'
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=5); print(200)
except urllib.error.HTTPError as e:
    print(e.code)
PY
)
[ "$curl_404" = 404 ] || fail "GET /other answered $curl_404, not 404"
echo "promtool check metrics passes on all 6 tasks; /other is 404"

kill -TERM "$CHIEF_PID"
wait_pid "$CHIEF_PID" 60
[ "$WAIT_RC" = 143 ] || fail "the chief exited $WAIT_RC after SIGTERM (expected 143)"
echo "PASS"
