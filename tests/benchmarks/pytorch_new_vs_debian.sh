#!/usr/bin/env bash
# The existing PyTorch peers (../shared/peers/pytorch) on the newest CPU PyTorch from PyPI (the
# `torch` environment of deploy/install-python-peers.sh) and on Debian's 1.13 (python3-torch, its
# tuned setup: OpenMP OpenBLAS + channels-last), alternately, beside pstrain: the CNN (one process,
# 2 threads, --steps steps), DDP (2 processes x 1 thread), the RPC parameter server (2 trainers x 1
# thread) and the CTR peer (2 threads, one epoch of the default synthetic set). Prints each run's
# training examples/s and accuracy or AUC; pstrain is compared against the faster PyTorch.
#
#   tests/benchmarks/pytorch_new_vs_debian.sh [--steps 300] [--reps 1] [--bin build/bin] [--peers DIR]
#                                             [--only cnn,ddp,rpc,ctr]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/tests/benchmarks/bench_lib.sh"
STEPS=300 REPS=1 BIN="$ROOT/build/bin" PEERS="$ROOT/../shared/peers/pytorch" ONLY=cnn,ddp,rpc,ctr
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) STEPS=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --peers) PEERS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
DEB=/usr/bin/python3
OB=/usr/lib/x86_64-linux-gnu/openblas-openmp
bench_peer_deps "$DEB"
NEW=$(bash "$ROOT/deploy/install-python-peers.sh" --python torch)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/pstrain-torch.XXXXXX")
echo "logs in $OUT" >&2
has() { [[ ",$ONLY," == *",$1,"* ]]; }

# peer NAME PYTHON SCRIPT ARGS...: prints "examples/s quality" from the peer's RESULT line.
peer() {
  local name=$1 py=$2 script=$3 log="$OUT/$1.r$rep.log" env=()
  shift 3
  [ "$py" = "$DEB" ] && env=(LD_LIBRARY_PATH="$OB")
  (cd "$PEERS" && env "${env[@]}" OMP_NUM_THREADS="${OMP:-2}" timeout 1800 "$py" "$script" "$@") >"$log" 2>&1 ||
    { echo "$name failed, see $log" >&2; return 1; }
  python3 -c "import json,sys
for l in open(sys.argv[1]):
    if l.startswith('RESULT '):
        d = json.loads(l[7:])
        q = d.get('test_auc', d.get('final_test_acc', d.get('test_acc')))
        if q is None:
            q = next((v for k, v in d.items() if 'acc' in k and isinstance(v, (int, float))), float('nan'))
        print(d['train_examples_per_sec'], q)" "$log" | tee -a "$OUT/$name.runs"
}
pstrain_cnn() {
  "$BIN/pstrain" train --job=cnn --steps="$STEPS" --threads=2 --eval=false 2>/dev/null | tail -n 1 |
    python3 -c "import json,sys; d=json.load(sys.stdin); print(d['examples_per_second'], 'nan')" | tee -a "$OUT/pstrain-cnn.runs"
}

echo "host: $(bench_host_line)"
echo "PyTorch: newest $("$NEW" -c 'import torch; print(torch.__version__)'), Debian $("$DEB" -c 'import torch; print(torch.__version__)')"
echo "load average before: $(bench_load)"
if has ctr; then
  "$BIN/pstrain" datagen ctr --default >"$OUT/datagen.out" 2>&1
  TRAIN=$(grep -o '[^ ]*train\.txt' "$OUT/datagen.out" | head -n 1)
  TEST=$(grep -o '[^ ]*test\.txt' "$OUT/datagen.out" | head -n 1)
fi
for rep in $(seq 1 "$REPS"); do
  if has cnn; then
    echo "rep $rep cnn: pstrain train $(pstrain_cnn)" >&2
    echo "rep $rep cnn: newest $(peer cnn-new "$NEW" cnn_fmnist.py --epochs 1 --threads 2 --limit-steps "$STEPS" --channels-last --infer-batches '')" >&2
    echo "rep $rep cnn: debian $(peer cnn-deb "$DEB" cnn_fmnist.py --epochs 1 --threads 2 --limit-steps "$STEPS" --channels-last --infer-batches '')" >&2
  fi
  if has ddp; then
    OMP=1 peer ddp-new "$NEW" ddp_fmnist.py --procs 2 --threads 1 --epochs 1 --channels-last >/dev/null
    OMP=1 peer ddp-deb "$DEB" ddp_fmnist.py --procs 2 --threads 1 --epochs 1 --channels-last >/dev/null
  fi
  if has rpc; then
    OMP=1 peer rpc-new "$NEW" rpc_ps.py --trainers 2 --threads 1 --epochs 1 --channels-last >/dev/null
    OMP=1 peer rpc-deb "$DEB" rpc_ps.py --trainers 2 --threads 1 --epochs 1 --channels-last >/dev/null
  fi
  if has ctr; then
    peer ctr-new "$NEW" ctr_criteo.py --train "$TRAIN" --test "$TEST" --threads 2 --epochs 1 >/dev/null
    peer ctr-deb "$DEB" ctr_criteo.py --train "$TRAIN" --test "$TEST" --threads 2 --epochs 1 >/dev/null
  fi
done
echo "load average after: $(bench_load)"
python3 - "$OUT" "$STEPS" <<'PY'
import os, statistics, sys
out, steps = sys.argv[1:3]
def runs(name):
    p = os.path.join(out, name + ".runs")
    return [[float(x) for x in l.split()] for l in open(p) if l.strip()] if os.path.exists(p) else []
print("%-58s %12s %10s" % ("", "examples/s", "acc/AUC"))
for key, what in (("pstrain-cnn", "pstrain train, cnn, 2 threads, %s steps" % steps),
                  ("cnn-new", "cnn_fmnist.py, newest PyTorch, 2 threads, %s steps" % steps),
                  ("cnn-deb", "cnn_fmnist.py, Debian 1.13 tuned, 2 threads, %s steps" % steps),
                  ("ddp-new", "ddp_fmnist.py, newest, 2 procs x 1 thread, 1 epoch"),
                  ("ddp-deb", "ddp_fmnist.py, Debian tuned, 2 procs x 1 thread, 1 epoch"),
                  ("rpc-new", "rpc_ps.py, newest, 2 trainers x 1 thread, 1 epoch"),
                  ("rpc-deb", "rpc_ps.py, Debian tuned, 2 trainers x 1 thread, 1 epoch"),
                  ("ctr-new", "ctr_criteo.py, newest, 2 threads, 1 epoch"),
                  ("ctr-deb", "ctr_criteo.py, Debian tuned, 2 threads, 1 epoch")):
    rs = runs(key)
    if rs:
        print("%-58s %12.0f %10.4f" % (what, statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)))
ours = runs("pstrain-cnn")
faster = max((runs(k) for k in ("cnn-new", "cnn-deb") if runs(k)), key=lambda rs: statistics.median(r[0] for r in rs), default=None)
if ours and faster:
    print("ratio pstrain train / the faster PyTorch on the cnn: %.2fx" % (statistics.median(r[0] for r in ours) /
                                                                       statistics.median(r[0] for r in faster)))
PY
