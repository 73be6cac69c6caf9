#!/usr/bin/env bash
# ctest deploy_compose_config: deploy/docker/docker-compose.yml validates offline
# (`docker-compose config`), and the services' TF_CONFIGs form one cluster whose host names are the
# service names and which pstrain's parser accepts. A copy with two services given the same task
# must be caught. Skips (exit 77) when docker-compose is not installed.
#   deploy_compose_config_test.sh SOURCE_DIR PSTRAIN_BINARY
set -euo pipefail
src=$1
pstrain=$2
# shellcheck source=tests/integration/deploy/tf_config_lib.sh
source "$src/tests/integration/deploy/tf_config_lib.sh"

if ! command -v docker-compose >/dev/null; then
  echo "SKIP: docker-compose is not installed (apt-get install docker-compose to run this test)"
  exit 77
fi
compose_file=$src/deploy/docker/docker-compose.yml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

docker-compose -f "$compose_file" config -q
docker-compose -f "$compose_file" config >"$tmp/rendered.yml"
mkdir "$tmp/ok"
"$(deploy_python)" "$DEPLOY_TEST_DIR/tf_config_check.py" compose "$tmp/rendered.yml" "$tmp/ok"
check_tf_config_dir "$tmp/ok" "$pstrain"

# The check must bite: worker1 claiming worker0's task.
mkdir "$tmp/bad"
cp "$tmp/ok"/*.json "$tmp/bad/"
sed -i 's/"index": 1}/"index": 0}/' "$tmp/bad/worker1.json"
if out=$(check_tf_config_dir "$tmp/bad" "$pstrain"); then
  echo "FAIL: a cluster with two processes for worker:0 was accepted"
  exit 1
fi
grep -q "task worker:0 is also the task of" <<<"$out" || { echo "FAIL: unexpected message: $out"; exit 1; }

# Health checks, restarts and metrics; then the healthcheck's own command against a real ps.
"$(deploy_python)" "$DEPLOY_TEST_DIR/tf_config_check.py" compose-ops "$tmp/rendered.yml"
bin_dir=$(dirname "$pstrain")
read -r port metrics_port <<<"$(python3 -c 'import socket
a, b = socket.socket(), socket.socket(); a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])')"
TF_CONFIG="{\"cluster\": {\"worker\": [\"localhost:1\"], \"ps\": [\"localhost:$port\"]}, \"task\": {\"type\": \"ps\", \"index\": 0}}" \
  "$bin_dir/pstrain-ps" --listen="127.0.0.1:$port" --metrics_port="$metrics_port" >"$tmp/ps.log" 2>&1 &
ps_pid=$!
trap 'kill "$ps_pid" 2>/dev/null || true; wait "$ps_pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
mapfile -t check < <("$(deploy_python)" -c 'import sys, yaml
print("\n".join(yaml.safe_load(open(sys.argv[1]))["services"]["ps0"]["healthcheck"]["test"][2:]))' "$tmp/rendered.yml")
check[1]="localhost:$port"  # the compose file's localhost:2222, here on the test's port
healthy=""
for _ in $(seq 1 50); do
  if "$pstrain" "${check[@]}" >/dev/null 2>&1; then healthy=1; break; fi
  sleep 0.2
done
[ -n "$healthy" ] || { echo "FAIL: the compose healthcheck ($pstrain ${check[*]}) never passed against a real ps"; cat "$tmp/ps.log"; exit 1; }
kill "$ps_pid"; wait "$ps_pid" 2>/dev/null || true
if "$pstrain" "${check[@]}" >/dev/null 2>&1; then echo "FAIL: the healthcheck passes with the ps stopped"; exit 1; fi
echo "PASS: compose file valid; a duplicated task is reported: $(head -n1 <<<"$out"); every service has a"
echo "  pstrain health check (it passes on a real ps, fails once it stops), restarts and metrics labels"
