#!/usr/bin/env bash
# Builds the pstrain image and runs the docker-compose cluster (1 chief, 2 workers, 2 ps) until the
# chief finishes, then prints the final test accuracy and removes the containers and the volume.
#
#   deploy/docker/run-compose.sh [--steps N] [--job cnn|linear|FILE] [--bin-dir DIR] [--tls] [--keep]
#   (every flag also as --flag=value)
#
#   --steps N     training steps (default 200: a short job; the chief's --steps)
#   --job J       job spec preset or a JSON file inside the image (default cnn)
#   --bin-dir D   use binaries built elsewhere instead of a portable build (build-image.sh)
#   --tls         mutual TLS between every task: pstrain certs makes the material into
#                 build-docker/tls, docker-compose.tls.yml mounts it into every container
#   --keep        leave the cluster and its volume (and an engine started here) up afterwards
#   --timeout S   give up after S seconds of training (default 1800)
#
# When no docker engine answers, one is started in a network namespace of its own for the length of
# the run (deploy/docker/engine.sh) and stopped afterwards. Logs of every task are kept in
# build-docker/logs/<service>.log. Exit status: the chief's (0 done, 2 bad configuration, 1 failure).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
WORK=${PSTRAIN_DOCKER_WORK:-$REPO/build-docker}
COMPOSE_FILE=$REPO/deploy/docker/docker-compose.yml
PROJECT=pstrain
STEPS=200
JOB=cnn
TIMEOUT=1800
KEEP=0
TLS=0
IMAGE_ARGS=()

# shellcheck source=deploy/args.sh
source deploy/args.sh
args_normalize "keep tls help" "$@"
set -- "${ARGS[@]}"
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) STEPS=$2; shift 2 ;;
    --job) JOB=$2; shift 2 ;;
    --bin-dir) IMAGE_ARGS+=(--bin-dir "$2"); shift 2 ;;
    --keep) KEEP=1; shift ;;
    --tls) TLS=1; shift ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-compose: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

log() { echo "run-compose: $*" >&2; }
# docker-compose and debootstrap from Debian; docker.io only when no engine answers and none is
# installed (an existing Docker installation stays as it is).
extra=(docker-compose debootstrap)
if ! command -v dockerd >/dev/null && ! docker info >/dev/null 2>&1; then extra+=(docker.io); fi
bash deploy/install-deps.sh "${extra[@]}"

export PSTRAIN_STEPS=$STEPS PSTRAIN_JOB=$JOB PSTRAIN_IMAGE=pstrain:latest
COMPOSE_FILES=(-f "$COMPOSE_FILE")
[ "$TLS" = 0 ] || COMPOSE_FILES+=(-f "$REPO/deploy/docker/docker-compose.tls.yml")
export PSTRAIN_TLS_FILES=$WORK/tls
compose() { docker-compose -p "$PROJECT" "${COMPOSE_FILES[@]}" "$@"; }

LOGS_PID=""
cleanup() {
  local status=$?
  [ -z "$LOGS_PID" ] || kill "$LOGS_PID" 2>/dev/null || true
  if [ "$KEEP" -eq 0 ]; then
    if docker info >/dev/null 2>&1; then
      compose down -v --timeout 10 >/dev/null 2>&1 || log "docker-compose down failed"
    fi
    engine_stop
  elif [ -n "$ENGINE_PID" ]; then
    log "--keep: the engine started here stays up: export DOCKER_HOST=$DOCKER_HOST; stop it with"
    log "  docker-compose -p $PROJECT ${COMPOSE_FILES[*]} down -v; kill $ENGINE_PID; ip netns del $ENGINE_NS"
  fi
  exit "$status"
}

# shellcheck source=deploy/docker/engine.sh
source deploy/docker/engine.sh
trap cleanup EXIT
trap 'exit 130' INT TERM
engine_start "$WORK/engine"

t0=$(date +%s)
bash deploy/docker/build-image.sh "${IMAGE_ARGS[@]}"
t1=$(date +%s)
log "image ready in $((t1 - t0)) s; starting the cluster (job $JOB, $STEPS steps)"

compose down -v --timeout 5 >/dev/null 2>&1 || true  # leftovers of an interrupted run
if [ "$TLS" = 1 ]; then
  # The cluster's CA and one certificate per service, made by the image's own pstrain for the
  # TF_CONFIG every service gets, owned by the containers' user (keys stay 0600).
  rm -rf "$WORK/tls" && mkdir -p "$WORK/tls"
  compose config | python3 -c 'import sys, yaml, json
d = yaml.safe_load(sys.stdin)
print(json.dumps({"cluster": json.loads(d["services"]["chief"]["environment"]["TF_CONFIG"])["cluster"]}))' \
    >"$WORK/tls/cluster.json"
  docker run --rm -u root -v "$WORK/tls:/tls" --entrypoint /bin/sh pstrain:latest -c \
    'pstrain certs --out=/tls --cluster=/tls/cluster.json && chown -R pstrain:pstrain /tls' >&2
  log "mutual TLS: the cluster's certificates are in $WORK/tls (ca.key included: keep it private)"
fi
compose up -d --no-color 2>&1 | sed 's/^/  /' >&2
chief=$(compose ps -q chief)
[ -n "$chief" ] || { log "the chief container did not start"; exit 1; }
compose logs -f --no-color chief >&2 &
LOGS_PID=$!

# `docker wait` prints the chief's exit status once it stops; timeout bounds the whole training.
status=$(timeout "$TIMEOUT" docker wait "$chief") || { log "the chief did not finish within $TIMEOUT s"; status=124; }
t2=$(date +%s)
kill "$LOGS_PID" 2>/dev/null || true
LOGS_PID=""

mkdir -p "$WORK/logs"
for service in $(compose config --services); do
  compose logs --no-color --no-log-prefix "$service" 2>&1 | grep -v "^Attaching to " >"$WORK/logs/$service.log" || true
done
log "logs of every task: $WORK/logs/<service>.log (or: docker-compose -p $PROJECT -f $COMPOSE_FILE logs)"
log "cluster ran $((t2 - t1)) s; chief exit status $status"
# A done job's ps and workers exit 0 on their own (the chief tells them): say how each ended.
if [ "$status" = 0 ]; then
  for service in $(compose config --services); do
    [ "$service" = chief ] && continue
    id=$(compose ps -q "$service")
    [ -n "$id" ] || continue
    code=$(timeout 15 docker wait "$id" 2>/dev/null) || code="still running after 15 s"
    log "$service: exit status $code"
  done
fi

# The chief's final JSON summary (stdout) has "final_test_accuracy": <fraction>.
accuracy=$(grep -o '"final_test_accuracy": *[0-9.]*' "$WORK/logs/chief.log" | tail -n1 | grep -o '[0-9.]*$' || true)
if [ "$status" = 0 ] && [ -n "$accuracy" ]; then
  echo "final test accuracy: $accuracy"
elif [ "$status" = 0 ]; then
  log "the chief finished but its log names no test accuracy; see $WORK/logs/chief.log"
  status=1
fi
exit "$status"
