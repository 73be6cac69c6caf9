# Shared helpers of the benchmark scripts (source it): the host line every figure is quoted with,
# the PyTorch peers' dependencies, and run_peer for the CTR peers that end with a RESULT line.

# bench_host_line: "AMD EPYC, cpu family 26, model 2, AVX-512, 2 CPUs, 23 GiB (21 GiB available)".
bench_host_line() {
  echo "$(lscpu | sed -n 's/^Model name: *//p'), cpu family $(lscpu | sed -n 's/^CPU family: *//p')," \
    "model $(lscpu | sed -n 's/^Model: *//p'), $(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo no AVX-512)," \
    "$(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2 " GiB (" $7 " GiB available)"}')"
}

# bench_load: the 1, 5 and 15 minute load averages.
bench_load() { cut -d' ' -f1-3 /proc/loadavg; }

# bench_peer_deps PY: installs the peers' dependencies (Debian python3-torch, OpenMP OpenBLAS)
# when PY cannot import torch and numpy or the OpenMP OpenBLAS is missing.
bench_peer_deps() {
  if ! "$1" -c "import torch, numpy" 2>/dev/null || [ ! -d /usr/lib/x86_64-linux-gnu/openblas-openmp ]; then
    echo "installing the peers' dependencies (deploy/install-bench-deps.sh)" >&2
    bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/deploy/install-bench-deps.sh"
  fi
}

# run_peer NAME COMMAND...: runs a CTR peer in $PEERS (log: $OUT/NAME.r$rep.log) that ends with a
# `RESULT {json}` line, and hands its examples/s, wall seconds, test AUC and log loss to the
# caller's `record NAME "FIGURES"`.
run_peer() {
  local name=$1 log="$OUT/$1.r$rep.log" line
  shift
  (cd "$PEERS" && timeout 3600 "$@") >"$log" 2>&1 || { echo "$name failed, see $log" >&2; return 1; }
  line=$(python3 -c "import json,sys
for l in open(sys.argv[1]):
    if l.startswith('RESULT '):
        d = json.loads(l[7:]); print(d['train_examples_per_sec'], d['wall_seconds'], d['test_auc'], d['test_logloss'])" "$log")
  record "$name" "$line"
}

# run_ctr_cluster NAME [CHIEF_ARGS...]: one epoch of the ctr job (CHIEF_ARGS may change its model,
# e.g. --model_json=FILE) on the local cluster, 1 ps + 2 workers x 1 thread, async
# (deploy/local/demo.sh), over $TRAIN and $TEST; records "examples/s wall-s test-AUC log-loss" under
# NAME. Uses ROOT, OUT and rep.
run_ctr_cluster() {
  local name=$1 run="$OUT/$1.r$rep" t0 line
  shift
  t0=$(now)
  bash "$ROOT/deploy/local/demo.sh" --no-build --ps 1 --workers 2 --worker_threads 1 --job ctr --epochs 1 \
    --train_files "$TRAIN" --test_files "$TEST" --run_dir "$run" -- --checkpoint_every_steps=0 "$@" >"$run.log" 2>&1 ||
    { echo "$name run failed, see $run.log" >&2; return 1; }
  line=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1]))
print(d['examples_per_second'], float(sys.argv[2]), d['final_test_auc'], d['final_test_logloss'])" "$run/summary.json" \
    "$(echo "$(now) - $t0" | bc)")
  record "$name" "$line"
}

# bench_tfrs PY: the PYTHONPATH folder of TensorFlow Recommenders 0.7.3 (Cross, DotInteraction),
# downloaded on first use by PY's pip into the cache and unpacked there, never installed (its
# dependencies would change the tf environment's TensorFlow).
bench_tfrs() {
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/pstrain/tfrs-0.7.3"
  if [ ! -d "$dir/site/tensorflow_recommenders" ]; then
    echo "downloading TensorFlow Recommenders 0.7.3 into $dir (PYTHONPATH only, not installed)" >&2
    mkdir -p "$dir"
    "$1" -m pip download -q tensorflow-recommenders==0.7.3 --no-deps -d "$dir" >&2
    "$1" -m zipfile -e "$dir"/tensorflow_recommenders-0.7.3-py3-none-any.whl "$dir/site" >&2
  fi
  echo "$dir/site"
}

# now: seconds since the epoch, with nanoseconds. record NAME "FIGURES": appends a run's figures
# to $OUT/NAME.runs (the caller's $OUT and $rep) and echoes them.
now() { date +%s.%N; }
record() { echo "$2" >>"$OUT/$1.runs"; echo "rep $rep: $1 $2" >&2; }
