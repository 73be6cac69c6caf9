# shellcheck shell=bash
# Sourced by the deploy/docker scripts: makes a docker engine answer.
#
# engine_start STATE_DIR uses the engine that already answers (DOCKER_HOST or the default socket);
# when none does, it starts dockerd in a network namespace of its own (so its bridges and iptables
# rules never touch the host's network), with its images kept under STATE_DIR/data between runs, and
# exports DOCKER_HOST. engine_stop stops only a dockerd this shell started (by its PID) and removes
# its namespace; call it from an EXIT trap. Needs root, dockerd, ip and nsenter for the started engine.

ENGINE_PID=""
ENGINE_NS=""
ENGINE_RUN=""

engine_log() { echo "engine: $*" >&2; }

engine_start() {
  local state_dir=$1
  if docker info >/dev/null 2>&1; then
    engine_log "using the docker engine that answers at ${DOCKER_HOST:-the default socket}"
    return 0
  fi
  local tool
  for tool in dockerd ip nsenter setsid; do
    command -v "$tool" >/dev/null || { engine_log "no docker engine answers and '$tool' is missing (apt-get install docker.io iproute2)"; return 1; }
  done
  [ "$(id -u)" -eq 0 ] || { engine_log "no docker engine answers; starting one needs root"; return 1; }

  mkdir -p "$state_dir"
  exec {ENGINE_LOCK_FD}>"$state_dir/lock"
  flock -n "$ENGINE_LOCK_FD" || { engine_log "another run holds the engine state in $state_dir"; return 1; }
  ENGINE_NS="pstrain-docker-$$"
  ENGINE_RUN="/run/$ENGINE_NS"  # short path: unix socket paths are limited to 108 bytes
  mkdir -p "$state_dir/data" "$ENGINE_RUN"
  ip netns add "$ENGINE_NS"
  ip -n "$ENGINE_NS" link set lo up
  export DOCKER_HOST="unix://$ENGINE_RUN/docker.sock"
  engine_log "no docker engine answers: starting dockerd in network namespace $ENGINE_NS (log: $state_dir/dockerd.log)"
  nsenter --net="/run/netns/$ENGINE_NS" setsid dockerd --data-root "$state_dir/data" \
    --exec-root "$ENGINE_RUN/exec" --pidfile "$ENGINE_RUN/dockerd.pid" -H "$DOCKER_HOST" \
    >"$state_dir/dockerd.log" 2>&1 </dev/null &
  ENGINE_PID=$!  # nsenter and setsid exec in place, so this is dockerd itself

  local _
  for _ in $(seq 1 120); do  # at most 60 s
    if docker info >/dev/null 2>&1; then
      engine_log "dockerd (pid $ENGINE_PID) answers at $DOCKER_HOST"
      return 0
    fi
    kill -0 "$ENGINE_PID" 2>/dev/null || break
    sleep 0.5
  done
  engine_log "dockerd did not come up; the end of its log:"
  tail -n 20 "$state_dir/dockerd.log" >&2
  return 1
}

engine_stop() {
  if [ -n "$ENGINE_PID" ] && kill -0 "$ENGINE_PID" 2>/dev/null; then
    kill -TERM "$ENGINE_PID" 2>/dev/null || true
    local _
    for _ in $(seq 1 60); do  # dockerd stops its containers and containerd: at most 30 s
      kill -0 "$ENGINE_PID" 2>/dev/null || break
      sleep 0.5
    done
    if kill -0 "$ENGINE_PID" 2>/dev/null; then
      engine_log "dockerd (pid $ENGINE_PID) did not stop within 30 s; killing it"
      kill -KILL "$ENGINE_PID" 2>/dev/null || true
    fi
    engine_log "stopped dockerd (pid $ENGINE_PID)"
  fi
  ENGINE_PID=""
  if [ -n "$ENGINE_NS" ]; then
    ip netns del "$ENGINE_NS" 2>/dev/null || true
    rm -rf --one-file-system "$ENGINE_RUN" 2>/dev/null || true
    ENGINE_NS=""
  fi
}
