#!/usr/bin/env bash
# Builds the docker image pstrain:latest (override with --tag): the three role binaries and the
# pstrain tool on a Debian bookworm base that holds only their runtime libraries.
#
#   deploy/docker/build-image.sh [--bin-dir DIR] [--tag TAG]    (or --bin-dir=DIR --tag=TAG)
#
# 1. Binaries: by default a portable build (-DPSTRAIN_NATIVE=OFF, no CUDA, no tests; its kernels still
#    pick AVX-512 or AVX2 at run time when the host has them) in
#    build-docker/cmake; --bin-dir uses binaries built elsewhere (they must run on bookworm).
# 2. Runtime packages: the Debian packages that own the binaries' shared-library closure (ldd).
# 3. Base image pstrain-base:bookworm: debootstrap --variant=minbase, those packages installed with
#    apt inside the root filesystem, a `pstrain` user (uid 1000), then `docker import` (no registry
#    needed). The root filesystem is cached in build-docker/ keyed by the package list.
# 4. `docker build` of deploy/docker/Dockerfile on that base.
# Needs a docker engine that answers (run-compose.sh starts one when none does), and root plus
# debootstrap for step 3 when the base is not cached yet.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
WORK=${PSTRAIN_DOCKER_WORK:-$REPO/build-docker}
MIRROR=${PSTRAIN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${PSTRAIN_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
BINARIES=(pstrain-chief pstrain-worker pstrain-ps pstrain)
BIN_DIR=""
TAG=pstrain:latest

# shellcheck source=deploy/args.sh
source deploy/args.sh
args_normalize "help" "$@"
set -- "${ARGS[@]}"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) BIN_DIR=$(realpath "$2"); shift 2 ;;
    --tag) TAG=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

log() { echo "build-image: $*" >&2; }

build_binaries() {
  log "portable build of ${BINARIES[*]} in $WORK/cmake"
  bash deploy/install-deps.sh
  cmake -S . -B "$WORK/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPSTRAIN_NATIVE=OFF \
    -DPSTRAIN_CUDA=OFF -DPSTRAIN_BUILD_TESTS=OFF -DPSTRAIN_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build "$WORK/cmake" -j"${PSTRAIN_BUILD_JOBS:-$(nproc)}" --target "${BINARIES[@]}"
  BIN_DIR=$WORK/cmake/bin
}

# Prints the Debian package owning one library path (merged /usr: try the path, /usr + path and
# the resolved path); fails when no package owns it.
owner_of() {
  local lib=$1 candidate found
  for candidate in "$lib" "/usr$lib" "$(realpath "$lib")"; do
    if found=$(dpkg-query -S "$candidate" 2>/dev/null); then
      found=${found%%$'\n'*}  # "pkg:arch: path" or "pkg1, pkg2: path"
      found=${found%%:*}
      echo "${found%%,*}"
      return 0
    fi
  done
  return 1
}

# Prints the packages owning the binaries' shared-library closure, one per line. Fails when a
# library belongs to no package (e.g. CUDA's under /usr/local): the image could not provide it.
runtime_packages() {
  local bin lib owner owners="" unowned=""
  for lib in $(for bin in "${BINARIES[@]}"; do
                 ldd "$BIN_DIR/$bin" | awk '/=> \//{print $3} /^\s*\/[^ ]+/{print $1}'
               done | sort -u); do
    if owner=$(owner_of "$lib"); then owners+="$owner"$'\n'; else unowned+=" $lib"; fi
  done
  if [ -n "$unowned" ]; then
    log "no Debian package provides$unowned: use the default portable build (CUDA off) or"
    log "binaries that need only Debian's libraries"
    return 1
  fi
  printf '%s' "$owners" | sort -u
}

# The bare minbase root filesystem, cached: it does not depend on the binaries.
make_minbase_tar() {
  local tar="$WORK/minbase-bookworm.tar" root="$WORK/minbase.tmp"
  [ -f "$tar" ] && return 0
  command -v debootstrap >/dev/null || { log "debootstrap is missing: apt-get install debootstrap"; exit 1; }
  rm -rf --one-file-system "$root"
  log "debootstrap --variant=minbase bookworm from $MIRROR (a few minutes, once)"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -n 20 "$WORK/debootstrap.log" >&2; exit 1; }
  tar -C "$root" --numeric-owner -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
  rm -rf --one-file-system "$root"
}

# Writes TAR: minbase plus the runtime packages given as arguments and the pstrain user.
make_rootfs_tar() {
  local tar=$1; shift
  local root="$WORK/rootfs.tmp"
  [ "$(id -u)" -eq 0 ] || { log "making the base root filesystem needs root (debootstrap, chroot)"; exit 1; }
  make_minbase_tar
  rm -rf --one-file-system "$root" && mkdir -p "$root"
  tar -C "$root" --numeric-owner -xf "$WORK/minbase-bookworm.tar"
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
    "$MIRROR" "$MIRROR" "$SECURITY_MIRROR" >"$root/etc/apt/sources.list"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  log "installing runtime packages in the root filesystem: $*"
  chroot "$root" env DEBIAN_FRONTEND=noninteractive sh -c \
    'apt-get update -q && apt-get install -y -q --no-install-recommends "$@" && apt-get clean' \
    sh "$@" >"$WORK/apt.log" 2>&1 || { tail -n 20 "$WORK/apt.log" >&2; exit 1; }
  chroot "$root" useradd --uid 1000 --user-group --home-dir /var/lib/pstrain --create-home \
    --shell /usr/sbin/nologin pstrain
  install -d -o 1000 -g 1000 "$root/var/lib/pstrain/model"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/usr/share/doc/* \
    "$root"/usr/share/man/* "$root"/usr/share/locale/* "$root/etc/resolv.conf"
  tar -C "$root" --numeric-owner -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
  rm -rf --one-file-system "$root"
}

main() {
  mkdir -p "$WORK"
  [ -n "$BIN_DIR" ] || build_binaries
  local bin
  for bin in "${BINARIES[@]}"; do
    [ -x "$BIN_DIR/$bin" ] || { log "$BIN_DIR/$bin is missing (build it, or drop --bin-dir)"; exit 1; }
  done
  local packages
  packages=$(runtime_packages) || exit 1
  packages=$(echo $packages)  # one line
  # shellcheck source=deploy/docker/engine.sh
  source deploy/docker/engine.sh
  trap engine_stop EXIT
  engine_start "$WORK/engine"
  local key
  key=$(echo "$packages" | sha256sum | cut -c1-12)
  local base="pstrain-base:bookworm-$key"
  if docker image inspect "$base" >/dev/null 2>&1; then
    log "base image $base is already there"
  else
    local tar="$WORK/rootfs-bookworm-$key.tar"
    # shellcheck disable=SC2086  # one word per package
    [ -f "$tar" ] || make_rootfs_tar "$tar" $packages
    log "docker import $tar as $base"
    docker import "$tar" "$base" >/dev/null
  fi
  docker tag "$base" pstrain-base:bookworm

  local context="$WORK/context"
  rm -rf "$context" && mkdir -p "$context/bin"
  cp deploy/docker/Dockerfile "$context/"
  for bin in "${BINARIES[@]}"; do
    install -m 0755 -s "$BIN_DIR/$bin" "$context/bin/$bin"
  done
  log "docker build -t $TAG (base $base)"
  DOCKER_BUILDKIT=0 docker build -q --build-arg "BASE=$base" -t "$TAG" "$context" >/dev/null
  log "image $TAG: $(docker image inspect -f '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}') \
(runtime packages: $packages)"
}

main
