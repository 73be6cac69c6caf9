# shellcheck shell=bash
# Sourced by the deploy tests: checks a directory of TF_CONFIG files, one per process (<host>.json).
#   check_tf_config_dir DIR PSTRAIN
# Fails (returns 1, saying why) unless the files form one consistent cluster (tf_config_check.py)
# and pstrain's own parser accepts every one of them (`pstrain plan --tf_config=FILE`).

DEPLOY_TEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The python that has yaml (docker-compose's), else the first python3.
deploy_python() {
  if /usr/bin/python3 -c 'import yaml' 2>/dev/null; then echo /usr/bin/python3; else echo python3; fi
}

check_tf_config_dir() {
  local dir=$1 pstrain=$2 f
  "$(deploy_python)" "$DEPLOY_TEST_DIR/tf_config_check.py" consistent "$dir" || return 1
  for f in "$dir"/*.json; do
    if ! "$pstrain" plan --job=cnn --tf_config="$f" >/dev/null; then
      echo "pstrain rejects the TF_CONFIG of $(basename "$f" .json): $(cat "$f")"
      return 1
    fi
  done
  echo "$(ls "$dir" | wc -l) TF_CONFIG documents form one cluster and pstrain accepts each"
}
