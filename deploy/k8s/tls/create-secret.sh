#!/usr/bin/env bash
# Makes the cluster's TLS material for the plain manifests' task names (pstrain certs) and prints
# the Secret pstrain-tls holding it (without the CA's key, which stays in --out) for kubectl apply.
#   deploy/k8s/tls/create-secret.sh --out DIR [--workers 2] [--ps 2] [--name pstrain] [--port 2222]
#                                   [--pstrain PATH] | kubectl apply -f -
# Keep the counts equal to the Jobs' completions (as tf-config.sh is told them).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT="" WORKERS=2 PS=2 NAME=pstrain PORT=2222 PSTRAIN=build/bin/pstrain
# shellcheck source=deploy/args.sh
source deploy/args.sh
args_normalize "help" "$@"
set -- "${ARGS[@]}"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --ps) PS=$2; shift 2 ;;
    --name) NAME=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --pstrain) PSTRAIN=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "create-secret: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || { echo "create-secret: give --out DIR (where the CA's key is kept)" >&2; exit 2; }
for n in "$WORKERS" "$PS"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "create-secret: --workers and --ps need positive integers" >&2; exit 2; }
done
[ -x "$PSTRAIN" ] || { echo "create-secret: no pstrain at $PSTRAIN (bash deploy/build.sh, or --pstrain)" >&2; exit 2; }
hosts() {  # hosts TYPE COUNT: as tf-config.sh names them
  local list="" i
  for ((i = 0; i < $2; i++)); do list+="${list:+,}\"$NAME-$1-$i.$NAME-$1:$PORT\""; done
  echo "[$list]"
}
mkdir -p "$OUT"
echo "{\"cluster\": {\"chief\": $(hosts chief 1), \"worker\": $(hosts worker "$WORKERS"), \"ps\": $(hosts ps "$PS")}}" \
  >"$OUT/cluster.json"
"$PSTRAIN" certs --out="$OUT" --cluster="$OUT/cluster.json" >&2
files=()
for f in "$OUT"/*.crt "$OUT"/*.key; do
  [ "$(basename "$f")" = ca.key ] || files+=(--from-file="$f")
done
kubectl create secret generic pstrain-tls "${files[@]}" --dry-run=client -o yaml
