#!/usr/bin/env bash
# The ps's sparse-apply rate on one core: Adagrad on one ps's share of a 50,000,000 x 16 table
# (12,500,000 x 16 rows + accumulator, 1.6 GB) against a plain random-row read-modify-write loop
# over arrays of the same size in the same run (the memory-bound limit), for batches of distinct
# ids drawn uniformly and Zipf-like (exponent 1.05, hot ids scattered). Prints the host, its load
# and one table (see sparse_apply_benchmark.cc for what each column measures).
#
# Usage: tests/benchmarks/sparse_apply_rate.sh [extra flags for sparse_apply_benchmark, e.g. --rows=2000000]
#   env: BUILD_DIR (default build)
# Needs: a build with benchmarks (deploy/build.sh) and ~3.5 GB of free memory at the default size.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
BENCH=$BUILD_DIR/benchmarks/sparse_apply_benchmark
[ -x "$BENCH" ] || { echo "sparse_apply_rate: $BENCH not found; build first (deploy/build.sh)" >&2; exit 2; }

echo "host: $(lscpu | sed -n 's/^Model name: *//p'); cpu family $(lscpu | sed -n 's/^CPU family: *//p')," \
  "model $(lscpu | sed -n 's/^Model: *//p'); $(grep -q avx512f /proc/cpuinfo && echo AVX-512 || echo no AVX-512);" \
  "$(nproc) cores"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BENCH" "$@"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
