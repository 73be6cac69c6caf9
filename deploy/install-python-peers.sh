#!/usr/bin/env bash
# Creates the pinned Python virtual environments that the TensorFlow, PyTorch and TorchRec peers
# (tests/benchmarks/peers/) and the checkers that read pstrain's files with real tools (TensorBoard,
# kubernetes-validate) need, from PyPI, in the user's cache directory; never in the system Python.
# Not needed to build or test pstrain itself. Idempotent: an environment whose pins are unchanged
# is left as it is (a stamp file holds its pins).
#
#   deploy/install-python-peers.sh [ENV...]      ENV: tools keras tf torch torchrec, or all (default: all)
#   deploy/install-python-peers.sh --python ENV  prints ENV's python (installing it first if needed)
#
# The environments, under ${XDG_CACHE_HOME:-$HOME/.cache}/pstrain/venv/ (PSTRAIN_VENV_DIR overrides):
#   tools     TensorBoard and kubernetes-validate: the checkers the tests run (small, fast to install)
#   tf        TensorFlow 2.15 (the last release with tf.estimator; Keras 2 through tf_keras, since
#             Keras 3 has no parameter-server training), TensorBoard 2.15, NumPy 1.26 (TF 2.15 needs < 2)
#   keras     Keras 3 on JAX's CPU build, h5py, ONNX and ONNX Runtime: the checkers of the model files
#             pstrain reads and writes (to_json, .weights.h5, .onnx)
#   torch     the newest PyTorch (its PyPI wheel for Linux brings NVIDIA's CUDA libraries as
#             dependencies: it imports only with them, and runs on the CPU without a GPU)
#   torchrec  TorchRec with FBGEMM's CPU build (fbgemm-gpu-cpu), installed --no-deps since TorchRec
#             names the GPU build, on the PyTorch that this FBGEMM is built for (FBGEMM 1.9 <-> 2.14;
#             there is no FBGEMM for the newest PyTorch yet, hence an environment of its own)
# Uses Debian's /usr/bin/python3 (3.11) and its venv module (apt-get install python3-venv).
set -euo pipefail

VENV_ROOT=${PSTRAIN_VENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pstrain/venv}
PY=${PSTRAIN_BASE_PYTHON:-/usr/bin/python3}

# pins ENV: "ARGS|ARGS|...": pip install runs, in order, each with the arguments between bars.
pins() {
  case $1 in
    tools) echo "tensorboard==2.20.0 kubernetes-validate==1.34.1" ;;
    tf) echo "tensorflow-cpu==2.15.1 tf-keras==2.15.1 tensorboard==2.15.2 numpy==1.26.4 h5py==3.11.0 portpicker==1.6.0" ;;
    keras) echo "keras==3.15.1 jax==0.10.2 jaxlib==0.10.2 numpy==2.4.6 h5py==3.16.0 onnx==1.23.2 onnxruntime==1.32.0" ;;
    torch) echo "torch==2.15.0 numpy==2.3.5" ;;
    torchrec) echo "torch==2.14.1 numpy==2.3.5|--no-deps fbgemm-gpu-cpu==1.9.0 torchrec==1.9.2" \
                   "|tensordict==0.15.3 torchmetrics==1.0.3 tqdm==4.70.1 pyre-extensions==0.0.32 scikit-learn==1.9.1" ;;
    *) return 1 ;;
  esac
}

install_env() {
  local name=$1 dir="$VENV_ROOT/$1" want step
  want=$(pins "$name") || { echo "install-python-peers: unknown environment '$name' (tools keras tf torch torchrec all)" >&2; exit 2; }
  # Tests run in parallel and may ask for one environment at once: one installs, the others wait.
  mkdir -p "$VENV_ROOT"
  exec {lock}>"$VENV_ROOT/.$name.lock"
  flock -w 1200 "$lock" || { echo "install-python-peers: waited 20 minutes for another install of '$name'" >&2; exit 1; }
  if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/.pstrain-pins" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  "$PY" -c 'import venv, ensurepip' 2>/dev/null ||
    { echo "install-python-peers: $PY lacks venv/ensurepip (apt-get install python3-venv)" >&2; exit 1; }
  echo "install-python-peers: creating $dir ($want)" >&2
  rm -rf "$dir"
  mkdir -p "$VENV_ROOT"
  "$PY" -m venv "$dir"
  IFS='|' read -r -a steps <<<"$want"
  for step in "${steps[@]}"; do
    # shellcheck disable=SC2086  # the pins are words
    "$dir/bin/python" -m pip install --no-input --disable-pip-version-check -q $step >&2 ||
      { echo "install-python-peers: pip install $step failed (is PyPI reachable?)" >&2; rm -rf "$dir"; exit 1; }
  done
  echo "$want" >"$dir/.pstrain-pins"
}

if [ "${1:-}" = --python ]; then
  [ $# = 2 ] || { echo "usage: install-python-peers.sh --python ENV" >&2; exit 2; }
  install_env "$2"
  echo "$VENV_ROOT/$2/bin/python"
  exit 0
fi
envs=("$@")
[ ${#envs[@]} = 0 ] || [ "${envs[*]}" = all ] && envs=(tools keras tf torch torchrec)
for e in "${envs[@]}"; do install_env "$e"; done
for e in "${envs[@]}"; do echo "$e: $VENV_ROOT/$e/bin/python"; done
