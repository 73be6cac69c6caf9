#!/usr/bin/env bash
# Installs pstrain's build and run dependencies from Debian packages. Idempotent: does nothing
# when every package is already installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libeigen3-dev nlohmann-json3-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist python3
  libssl-dev                        # TLS: the tensor channel, pstrain certs
  libhdf5-dev                       # Keras weight files (.weights.h5, .h5) in and out
  docker-compose nftables iproute2  # deploy tests: compose file check, several-hosts cluster
  strace                            # the file-access test of bad inputs
  prometheus                        # the metrics test scrapes a cluster with the real server
  librsvg2-bin                      # rsvg-convert: `pstrain plot --out FILE.png`, the plot test
  python3-protobuf                  # the event-file test reads TensorBoard files with its own reader
  slurmctld slurmd slurm-client munge  # the Slurm test runs its own daemons (7 small packages)
)
PACKAGES+=("$@")

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
