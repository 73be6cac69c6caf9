#!/usr/bin/env bash
# Runs a command in a network namespace of its own whose only interface is loopback (root:
# `unshare -n`; else an unprivileged user namespace, `unshare -rn`). TensorFlow's gRPC servers bind
# 0.0.0.0 whatever address the cluster names; inside it they are reachable from this command only.
#   tests/benchmarks/peers/isolated.sh COMMAND [ARGS...]
set -euo pipefail
flags=-n
[ "$(id -u)" = 0 ] || flags=-rn
exec unshare "$flags" -- bash -c 'ip link set lo up 2>/dev/null || ifconfig lo up; exec "$@"' isolated "$@"
