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
echo "PASS: compose file valid; a duplicated task is reported: $(head -n1 <<<"$out")"
