#!/usr/bin/env bash
# The portable build (-DPSTRAIN_NATIVE=OFF: what the docker image, the compose file and the
# Kubernetes manifests run) against the native build (-march=native, deploy/build.sh's default):
# `pstrain train --job=cnn` examples/s, the builds run in turn within each repetition so that
# load on the machine hits both alike. Prints every run, the medians, and the ratio to native (of
# the medians, and the median of the per-repetition ratios). Target: portable >= 0.95x native.
#
# Usage: tests/benchmarks/portable_vs_native.sh [STEPS=400] [REPS=3] [THREADS=2]
#   env: NATIVE_DIR    native build (default build/, made by deploy/build.sh)
#        PORTABLE_DIR  portable build (default build-portable/, configured with -DPSTRAIN_NATIVE=OFF
#                      and built here when its pstrain is missing)
#        IMAGE_BIN     optional: a directory holding the docker image's own `pstrain` (copied out of
#                      the image, or build-docker/context/bin after deploy/docker/build-image.sh),
#                      run outside docker as a third build
set -euo pipefail

STEPS=${1:-400}
REPS=${2:-3}
THREADS=${3:-2}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NATIVE_DIR=${NATIVE_DIR:-$ROOT/build}
PORTABLE_DIR=${PORTABLE_DIR:-$ROOT/build-portable}

[ -x "$NATIVE_DIR/bin/pstrain" ] || { echo "portable_vs_native: no $NATIVE_DIR/bin/pstrain; run deploy/build.sh" >&2; exit 2; }
if [ ! -x "$PORTABLE_DIR/bin/pstrain" ]; then
  echo "portable_vs_native: building the portable pstrain in $PORTABLE_DIR" >&2
  cmake -S "$ROOT" -B "$PORTABLE_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPSTRAIN_NATIVE=OFF -DPSTRAIN_CUDA=OFF \
    -DPSTRAIN_BUILD_TESTS=OFF >/dev/null
  cmake --build "$PORTABLE_DIR" -j"$(nproc)" --target pstrain >&2
fi
names=(native portable)
bins=("$NATIVE_DIR/bin/pstrain" "$PORTABLE_DIR/bin/pstrain")
if [ -n "${IMAGE_BIN:-}" ]; then
  [ -x "$IMAGE_BIN/pstrain" ] || { echo "portable_vs_native: no $IMAGE_BIN/pstrain" >&2; exit 2; }
  names+=(image)
  bins+=("$IMAGE_BIN/pstrain")
fi

run() {  # run BINARY: prints "examples/s cpu_level" of one training run
  "$1" train --job=cnn --steps="$STEPS" --threads="$THREADS" --eval=false 2>/dev/null | tail -n 1 |
    python3 -c "import json,sys; d=json.load(sys.stdin); print('%.1f %s' % (d['examples_per_second'], d['cpu_level']))"
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

echo "cnn preset, batch 64, $STEPS steps per run, $THREADS threads, $REPS repetitions, builds in turn"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), AVX-512: $(grep -qw avx512f /proc/cpuinfo && echo yes || echo no), $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A results levels
for ((r = 1; r <= REPS; r++)); do
  line="  rep $r:"
  for i in "${!names[@]}"; do
    read -r eps level <<<"$(run "${bins[$i]}")"
    results[${names[$i]}]+="$eps "
    levels[${names[$i]}]=$level
    line+=" ${names[$i]} $eps"
  done
  echo "$line"
done
native=$(printf '%s\n' ${results[native]} | median)
printf "%-10s %-9s %12s %12s %18s\n" build "cpu level" "median ex/s" "vs native" "paired median"
for name in "${names[@]}"; do
  m=$(printf '%s\n' ${results[$name]} | median)
  read -r -a mine <<<"${results[$name]}"
  read -r -a base <<<"${results[native]}"
  paired=$(for i in "${!mine[@]}"; do awk -v a="${mine[$i]}" -v b="${base[$i]}" 'BEGIN {print a / b}'; done | median)
  awk -v n="$name" -v l="${levels[$name]}" -v m="$m" -v b="$native" -v p="$paired" \
    'BEGIN {printf "%-10s %-9s %12.0f %11.3fx %17.3fx\n", n, l, m, m / b, p}'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
