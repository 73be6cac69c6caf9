#!/usr/bin/env bash
# Dynamic table speed on one core: lookups and Adagrad pushes (rows/s) of a DynamicTable against a
# plain absl::flat_hash_map<int64_t, std::vector<float>> loop over the same keys in the same run,
# for rows of 16 and 64 floats and keys drawn uniformly and Zipf-like (exponent 1.05). Prints the
# host, its load and one table per row width (see dynamic_table_benchmark.cc for the columns).
#
# Usage: tests/benchmarks/dynamic_table_rate.sh [extra flags for dynamic_table_benchmark, e.g. --keys=10000000]
#   env: BUILD_DIR (default build)
# Needs: a build with benchmarks (deploy/build.sh) and about 1.5 GB of free memory at the default
# 1,000,000 keys (both structures, dim 64); 10,000,000 keys need about ten times that.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
BENCH=$BUILD_DIR/benchmarks/dynamic_table_benchmark
[ -x "$BENCH" ] || { echo "dynamic_table_rate: $BENCH not found; build first (deploy/build.sh)" >&2; exit 2; }

echo "host: $(lscpu | sed -n 's/^Model name: *//p'); $(grep -q avx512f /proc/cpuinfo && echo AVX-512 || echo no AVX-512);" \
  "$(nproc) cores"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BENCH" "$@"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
