#!/usr/bin/env bash
# One dynamic table of --rows rows x --dim floats with Adagrad (one slot), spread over --ps
# `pstrain-ps` processes by key hash and filled by PushKeys over gRPC
# (build/benchmarks/dynamic_ps_scale_benchmark). Prints, per ps: its rows, the table's own memory
# count, its peak RSS (VmHWM) and the ratio of that peak to
#   rows x (values + slots) + rows x 55 bytes (the stated per-row overhead bound,
#   ps/store/dynamic_table.h kMaxOverheadBytesPerRow)
# (target: within 1.3x), and its RSS before the table (the process's own base).
# Needs about rows x (dim x 8 + 55) bytes of memory in all (10^8 x 16: about 18 GB).
#
# Usage: tests/benchmarks/dynamic_ps_scale.sh [--rows 100000000] [--dim 16] [--ps 4] [--bin build]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/tests/benchmarks/bench_lib.sh"
ROWS=100000000 DIM=16 NPS=4 BUILD="$ROOT/build"
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS=$2; shift 2 ;;
    --dim) DIM=$2; shift 2 ;;
    --ps) NPS=$2; shift 2 ;;
    --bin) BUILD=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
DRIVER="$BUILD/benchmarks/dynamic_ps_scale_benchmark"
[ -x "$BUILD/bin/pstrain-ps" ] && [ -x "$DRIVER" ] ||
  { echo "dynamic_ps_scale: build pstrain-ps and dynamic_ps_scale_benchmark first (ninja -C build ...)" >&2; exit 2; }
NEED=$((ROWS * (DIM * 8 + 55) / 1024 / 1024 / 1024 + 1))
AVAIL=$(free -g | awk '/^Mem:/ {print $7}')
[ "$AVAIL" -gt "$NEED" ] || { echo "dynamic_ps_scale: needs about $NEED GiB, $AVAIL GiB available" >&2; exit 2; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/pstrain-dynamic-scale.XXXXXX")
echo "logs in $OUT" >&2

read -r -a PORTS <<<"$(python3 -c "
import socket
socks = [socket.socket() for _ in range($NPS + 2)]
for s in socks: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in socks))")"
PS_LIST="" ADDRS=""
for ((i = 1; i <= NPS; i++)); do
  PS_LIST+="${PS_LIST:+,}\"127.0.0.1:${PORTS[$i]}\""
  ADDRS+="${ADDRS:+,}127.0.0.1:${PORTS[$i]}"
done
# A worker address the cluster spec needs; nothing listens there (the driver plays the workers).
CLUSTER="{\"chief\":[\"127.0.0.1:${PORTS[0]}\"],\"worker\":[\"127.0.0.1:${PORTS[$((NPS + 1))]}\"],\"ps\":[$PS_LIST]}"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
for ((i = 0; i < NPS; i++)); do
  TF_CONFIG="{\"cluster\":$CLUSTER,\"task\":{\"type\":\"ps\",\"index\":$i}}" "$BUILD/bin/pstrain-ps" \
    >"$OUT/ps-$i.log" 2>&1 &
  PIDS+=($!)
done
sleep 2
BASE=()
for ((i = 0; i < NPS; i++)); do BASE+=("$(awk '/^VmRSS/ {print $2}' "/proc/${PIDS[$i]}/status")"); done

"$DRIVER" --ps="$ADDRS" --rows="$ROWS" --dim="$DIM" | tee "$OUT/driver.out"

echo "host: $(bench_host_line); load $(bench_load)"
echo "table: $ROWS rows x $DIM floats, Adagrad (1 slot), over $NPS ps"
for ((i = 0; i < NPS; i++)); do
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/${PIDS[$i]}/status")
  rows=$(sed -n "s/^ps:$i rows \([0-9]*\).*/\1/p" "$OUT/driver.out")
  python3 -c "
rows, dim, hwm_kib, base_kib = $rows, $DIM, $hwm, ${BASE[$i]}
bound = rows * dim * 4 * 2 + rows * 55
print('ps:$i rows %d, peak RSS %.2f GiB (base %.0f MiB); rows x (values + slots) + 55 B/row = %.2f GiB; ratio %.3f (target <= 1.3)'
      % (rows, hwm_kib / 2**20, base_kib / 1024, bound / 2**30, hwm_kib * 1024 / bound))"
done
