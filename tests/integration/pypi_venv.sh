# shellcheck shell=bash
# Shared by the tests that check pstrain's files with real tools from PyPI (TensorBoard,
# kubernetes-validate): the cache's virtual environment, installed on first use.
# Usage: source pypi_venv.sh; PY=$(pypi_python tools) || exit 77
# pypi_python ENV prints the python of deploy/install-python-peers.sh's environment ENV, installing
# it first when it is missing (up to 10 minutes). When the install fails (PyPI cannot be reached),
# it prints "SKIP: ..." naming the install command, with the tail of the install's log, and returns 1.
pypi_python() {
  local env=$1 root log py
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  log=$(mktemp "${TMPDIR:-/tmp}/pstrain-pypi.XXXXXX")
  if py=$(timeout 600 bash "$root/deploy/install-python-peers.sh" --python "$env" 2>"$log"); then
    rm -f "$log"
    echo "$py"
    return 0
  fi
  echo "SKIP: the '$env' Python environment could not be installed from PyPI (is PyPI reachable?);" \
    "install it with: bash deploy/install-python-peers.sh $env" >&2
  tail -n 5 "$log" >&2
  rm -f "$log"
  return 1
}
