#!/usr/bin/env bash
# ctest deploy_k8s_manifests: deploy/k8s/tfjob and deploy/k8s/plain render with kustomize, every
# object passes kubernetes-validate (PyPI) in strict mode, so an unknown or misspelt field fails (the
# TFJob against its own schema, its pod templates strictly as PodTemplates), references between
# objects hold, and the TF_CONFIG each pod would get (the operator's for the TFJob, the entry
# script's for the plain manifests) forms one cluster that pstrain's parser accepts. Broken copies
# must be caught. Skips (exit 77) without kubectl/kustomize, or when the validator's environment
# cannot be installed from PyPI (offline: bash deploy/install-python-peers.sh tools).
#   deploy_k8s_manifests_test.sh SOURCE_DIR PSTRAIN_BINARY WORK_DIR
set -euo pipefail
src=$1
pstrain=$2
# $3, the build dir, held the npm validator; kubernetes-validate lives in the user's cache instead.
# shellcheck source=tests/integration/deploy/tf_config_lib.sh
source "$src/tests/integration/deploy/tf_config_lib.sh"
# shellcheck source=tests/integration/pypi_venv.sh
source "$src/tests/integration/pypi_venv.sh"

skip() { echo "SKIP: $*"; exit 77; }
if command -v kubectl >/dev/null; then
  render() { kubectl kustomize "$1"; }
elif command -v kustomize >/dev/null; then
  render() { kustomize build "$1"; }
else
  skip "neither kubectl nor kustomize is installed (apt-get install kubernetes-client to run this test)"
fi
# The validator's environment (kubernetes-validate, pinned), installed once into the user's cache.
PY=$(pypi_python tools) || exit 77
validate() { "$PY" "$src/deploy/k8s/validate/validate.py" "$@"; }
echo "validator: kubernetes-validate $("$PY" -c 'import kubernetes_validate.version as v; print(v.__version__)' 2>/dev/null || echo '?') ($PY)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for variant in tfjob plain tls; do
  render "$src/deploy/k8s/$variant" >"$tmp/$variant.yaml"
  mkdir "$tmp/$variant"
  validate --tf-configs "$tmp/$variant" "$tmp/$variant.yaml"
  check_tf_config_dir "$tmp/$variant" "$pstrain"
done
# The TLS variant: every workload mounts the Secret and names it in PSTRAIN_TLS_DIR; the ps and
# workers are probed over TLS. The Secret's script makes every task's files, never the CA's key.
[ "$(grep -c 'secretName: pstrain-tls' "$tmp/tls.yaml")" = 3 ] || { echo "FAIL: not every workload mounts pstrain-tls"; exit 1; }
[ "$(grep -c 'name: PSTRAIN_TLS_DIR' "$tmp/tls.yaml")" = 3 ] || { echo "FAIL: not every workload sets PSTRAIN_TLS_DIR"; exit 1; }
[ "$(grep -c 'pstrain health localhost:2222 --tls_dir' "$tmp/tls.yaml")" = 2 ] || { echo "FAIL: probes not over TLS"; exit 1; }
if grep -q 'grpc:' "$tmp/tls.yaml"; then echo "FAIL: a plaintext gRPC probe is left"; exit 1; fi
bash "$src/deploy/k8s/tls/create-secret.sh" --out "$tmp/tls-files" --pstrain "$pstrain" >"$tmp/secret.yaml" 2>/dev/null
for f in ca.crt chief-0.crt chief-0.key ps-0.crt ps-1.key worker-1.crt evaluator-0.key; do
  grep -q "^  $f: " "$tmp/secret.yaml" || { echo "FAIL: the Secret lacks $f"; exit 1; }
done
if grep -q '^  ca.key: ' "$tmp/secret.yaml"; then echo "FAIL: the Secret holds the CA's key"; exit 1; fi

# The checks must bite. expect_failure VARIANT MESSAGE FILTER...: the rendering of VARIANT passed
# through the command FILTER must fail, saying MESSAGE.
expect_failure() {
  local variant=$1 message=$2 out
  shift 2
  "$@" <"$tmp/$variant.yaml" >"$tmp/broken.yaml"
  rm -rf "$tmp/broken" && mkdir "$tmp/broken"
  if out=$(validate --tf-configs "$tmp/broken" "$tmp/broken.yaml" &&
           check_tf_config_dir "$tmp/broken" "$pstrain"); then
    echo "FAIL: $variant through '$*' was accepted"; exit 1
  fi
  grep -q -- "$message" <<<"$out" || { echo "FAIL: $variant through '$*': expected '$message', got: $out"; exit 1; }
  echo "caught ($variant, $*): $(grep -m1 -- "$message" <<<"$out")"
}
expect_failure tfjob "'Sometimes' is not one of" sed 's/restartPolicy: OnFailure/restartPolicy: Sometimes/'
expect_failure tfjob 'named "tensorflow"' sed 's/name: tensorflow/name: trainer/'
expect_failure plain "'two' is not of type 'integer'" sed 's/completions: 2/completions: two/'
expect_failure plain "the Service is not headless" sed 's/clusterIP: None/clusterIP: 10.96.0.10/'
expect_failure plain "no PersistentVolumeClaim" sed 's/claimName: pstrain-model/claimName: pstrain-models/'
# Strict mode: a misspelt field is an error, not a field Kubernetes would silently drop. In a
# built-in object, in a TFJob's pod template, and where the schema would otherwise accept the
# object (clusterIp: the Service would just get a cluster IP and not be headless).
expect_failure plain "'imagePullPolcy' was unexpected" sed 's/imagePullPolicy: IfNotPresent/imagePullPolcy: IfNotPresent/'
expect_failure plain "'clusterIp' was unexpected" sed 's/clusterIP: None/clusterIp: None/'
expect_failure tfjob "'imagePullPolcy' was unexpected" sed 's/imagePullPolicy: IfNotPresent/imagePullPolcy: IfNotPresent/'
expect_failure tls "'secretNme' was unexpected" sed 's/secretName: pstrain-tls/secretNme: pstrain-tls/'
# Three worker pods while every TF_CONFIG still lists two workers: pod pstrain-worker-2's task
# is outside the cluster.
expect_failure plain "task worker:2 is not in the cluster" \
  awk 'BEGIN { RS = "---\n"; ORS = "---\n" } /subdomain: pstrain-worker/ { sub(/completions: 2/, "completions: 3") } { print }'
# The ps and workers run to completion: a restart policy that restarts a task which exited 0 (the
# chief said the job is done) would keep the pods from ever completing.
for kind in ps worker; do
  policy=$(awk -v k="pstrain-$kind" 'BEGIN { RS = "---\n" } $0 ~ "subdomain: " k { if (match($0, /restartPolicy: [A-Za-z]+/)) print substr($0, RSTART + 15, RLENGTH - 15) }' "$tmp/plain.yaml")
  [ "$policy" = OnFailure ] || { echo "FAIL: pstrain-$kind's pods have restartPolicy '$policy', want OnFailure"; exit 1; }
done
for rtype in Chief PS Worker; do
  grep -A40 "^    $rtype:" "$tmp/tfjob.yaml" | grep -m1 "restartPolicy:" | grep -q OnFailure \
    || { echo "FAIL: the TFJob's $rtype restartPolicy is not OnFailure"; exit 1; }
done
echo "PASS: Kubernetes manifests valid; their TF_CONFIGs form one cluster; broken copies caught"
