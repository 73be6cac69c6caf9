#!/bin/sh
# Forms TF_CONFIG for this pod, then runs the command given as arguments with it (POSIX sh).
#   sh /etc/pstrain/tf-config.sh pstrain-worker --data_dir=...
# Pods are named <name>-<type>-<index> (the Indexed Jobs' indexes; the chief Job's pod sets its
# hostname to <name>-chief-0) and each type has a headless Service <name>-<type>, so task <type>:<i>
# is reached at <name>-<type>-<i>.<name>-<type>:<port> from any pod of the namespace.
# Environment: PSTRAIN_TASK_TYPE (chief, worker or ps), PSTRAIN_NUM_WORKERS and PSTRAIN_NUM_PS (the
# Jobs' completions), PSTRAIN_NAME (default pstrain), PSTRAIN_PORT (default 2222).
set -eu
name=${PSTRAIN_NAME:-pstrain}
port=${PSTRAIN_PORT:-2222}

# hosts TYPE COUNT: the JSON list of the addresses of tasks TYPE:0 .. TYPE:COUNT-1.
hosts() {
  list=""
  i=0
  while [ "$i" -lt "$2" ]; do
    list="$list${list:+, }\"$name-$1-$i.$name-$1:$port\""
    i=$((i + 1))
  done
  printf '[%s]' "$list"
}

# shellcheck disable=SC3028  # the container runtime sets HOSTNAME to the pod's hostname
pod=${HOSTNAME:-$(hostname)}
index=${pod##*-}
case $index in
  '' | *[!0-9]*) echo "tf-config.sh: pod name '$pod' does not end in -<ordinal>" >&2; exit 2 ;;
esac
TF_CONFIG=$(printf '{"cluster": {"chief": %s, "worker": %s, "ps": %s}, "task": {"type": "%s", "index": %s}}' \
  "$(hosts chief 1)" "$(hosts worker "$PSTRAIN_NUM_WORKERS")" "$(hosts ps "$PSTRAIN_NUM_PS")" \
  "$PSTRAIN_TASK_TYPE" "$index")
export TF_CONFIG
echo "tf-config.sh: TF_CONFIG=$TF_CONFIG" >&2
exec "$@"
