# shellcheck shell=bash
# Sourced: several "hosts" on one machine, each a network namespace of its own, joined by a bridge
# that lives in a namespace of its own too, so nothing is added to the machine's own network.
#
#   netns_up PREFIX HOST...      namespaces PREFIX-HOST with addresses 10.77.0.11, .12, ... on a
#                                bridge in PREFIX-br; /etc/netns/PREFIX-HOST/hosts names every host
#                                (ip netns exec shows it as /etc/hosts), so HOSTs resolve by name
#   netns_exec HOST CMD...       runs CMD inside HOST (every client runs in a namespace: the
#                                10.77.0.0/24 addresses are never used from the root namespace)
#   netns_start HOST LOG CMD...  starts CMD inside HOST in the background, output to LOG; sets
#                                NETNS_LAST_PID to its PID and records it for netns_down (call it
#                                directly, not in $(...), or the record is lost with the subshell)
#   netns_cut HOST / netns_heal HOST   drop / accept again every packet of HOST but loopback (nft)
#   netns_down                   stops the processes netns_start started (by PID: TERM, then KILL
#                                after 5 s), deletes the namespaces and their /etc/netns entries
# Call netns_down from an EXIT trap. Needs root, ip (iproute2) and, for cuts, nft (nftables);
# netns_missing prints what is missing.

NETNS_PREFIX=""
NETNS_HOSTS=()
NETNS_PIDS=()
NETNS_LAST_PID=""
NETNS_SUBNET=10.77.0

netns_missing() {
  [ "$(id -u)" -eq 0 ] || { echo "root is needed to create network namespaces"; return 0; }
  local tool
  for tool in ip nft; do
    command -v "$tool" >/dev/null || { echo "'$tool' is missing (apt-get install iproute2 nftables)"; return 0; }
  done
  return 1
}

netns_name() { echo "$NETNS_PREFIX-$1"; }

netns_up() {
  NETNS_PREFIX=$1
  shift
  local bridge_ns="$NETNS_PREFIX-br" i host ns hosts_file
  ip netns add "$bridge_ns"
  NETNS_HOSTS=(br)  # so that netns_down removes what exists even when a later step fails
  ip -n "$bridge_ns" link set lo up
  ip -n "$bridge_ns" link add br0 type bridge
  ip -n "$bridge_ns" link set br0 up
  hosts_file=$(mktemp)
  printf '127.0.0.1\tlocalhost\n' >"$hosts_file"
  i=0
  for host in "$@"; do
    i=$((i + 1))
    printf '%s.%d\t%s\n' "$NETNS_SUBNET" $((10 + i)) "$host" >>"$hosts_file"
  done
  i=0
  for host in "$@"; do
    i=$((i + 1))
    ns=$(netns_name "$host")
    ip netns add "$ns"
    NETNS_HOSTS+=("$host")
    ip -n "$ns" link set lo up
    # The veth pair is made inside the bridge namespace with its peer moved straight into the host.
    ip -n "$bridge_ns" link add "v$i" type veth peer name eth0 netns "$ns"
    ip -n "$bridge_ns" link set "v$i" master br0 up
    ip -n "$ns" addr add "$NETNS_SUBNET.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
    mkdir -p "/etc/netns/$ns"
    cp "$hosts_file" "/etc/netns/$ns/hosts"
  done
  rm -f "$hosts_file"
}

netns_exec() {
  local host=$1
  shift
  ip netns exec "$(netns_name "$host")" "$@"
}

netns_start() {
  local host=$1 log=$2
  shift 2
  ip netns exec "$(netns_name "$host")" "$@" >"$log" 2>&1 </dev/null &
  NETNS_LAST_PID=$!  # ip netns exec execs CMD, so this is CMD's own PID
  NETNS_PIDS+=("$NETNS_LAST_PID")
}

netns_cut() {
  netns_exec "$1" nft -f - <<'EOF'
table inet netns_cut {
  chain input { type filter hook input priority 0; policy drop; iif "lo" accept; }
  chain output { type filter hook output priority 0; policy drop; oif "lo" accept; }
}
EOF
}

netns_heal() {
  netns_exec "$1" nft delete table inet netns_cut
}

# Waits (at most TIMEOUT seconds, polling every 0.2 s) until CMD succeeds; returns 1 on timeout.
netns_wait_until() {
  local timeout=$1 i
  shift
  for i in $(seq 1 $((timeout * 5))); do
    "$@" && return 0
    sleep 0.2
  done
  return 1
}

netns_all_stopped() {
  local pid
  for pid in "${NETNS_PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then return 1; fi
  done
}

netns_down() {
  local pid host
  for pid in "${NETNS_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  netns_wait_until 5 netns_all_stopped || true
  for pid in "${NETNS_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${NETNS_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  NETNS_PIDS=()
  for host in "${NETNS_HOSTS[@]}"; do
    ip netns del "$NETNS_PREFIX-$host" 2>/dev/null || true
    [ "$host" = br ] || rm -rf "/etc/netns/${NETNS_PREFIX:?}-$host"
  done
  NETNS_HOSTS=()
}
