#!/usr/bin/env bash
# ctest multihost_netns_harness: the several-hosts harness (deploy/netns/netns.sh) itself. Five
# namespaces on a bridge; an HTTP server in ps0; every other host reaches it BY NAME; a cut host
# (nft drop) cannot, the others still can; healed, it can again; afterwards nothing is left behind.
# Every client runs inside a namespace. Skips (exit 77) without root, ip or nft.
#   multihost_netns_harness_test.sh SOURCE_DIR
set -euo pipefail
src=$1
# shellcheck source=deploy/netns/netns.sh
source "$src/deploy/netns/netns.sh"
if why=$(netns_missing); then echo "SKIP: $why"; exit 77; fi
command -v python3 >/dev/null || { echo "SKIP: python3 is missing"; exit 77; }

prefix="psth$$"
tmp=$(mktemp -d)
trap 'netns_down; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

netns_up "$prefix" chief worker0 worker1 ps0 ps1
mkdir "$tmp/www" && echo "served by ps0" >"$tmp/www/index.html"
netns_start ps0 "$tmp/server.log" python3 -m http.server 8000 --directory "$tmp/www"
server=$NETNS_LAST_PID

# fetch HOST: from inside HOST, GET http://ps0:8000/ with a 2 s timeout; succeeds on the right body.
fetch() {
  netns_exec "$1" python3 -c '
import sys, urllib.request
body = urllib.request.urlopen("http://ps0:8000/", timeout=2).read().decode()
sys.exit(0 if body.strip() == "served by ps0" else 1)' 2>/dev/null
}

netns_wait_until 10 fetch chief || { cat "$tmp/server.log"; fail "chief cannot reach ps0:8000 by name"; }
for host in worker0 worker1 ps1; do fetch "$host" || fail "$host cannot reach ps0:8000"; done
netns_exec worker0 getent hosts worker1 | grep -q "^10\.77\.0\.13 " || fail "worker1 does not resolve to its own address"
echo "every host reaches ps0 by name"

netns_cut worker1
if fetch worker1; then fail "worker1 still reaches ps0 while cut off"; fi
fetch worker0 || fail "worker0 lost ps0 while only worker1 was cut off"
echo "worker1 cut off; worker0 unaffected"
netns_heal worker1
netns_wait_until 5 fetch worker1 || fail "worker1 does not reach ps0 again after the cut is healed"
echo "worker1 back"

kill -0 "$server" || fail "the server exited early"
netns_down
kill -0 "$server" 2>/dev/null && fail "the server (pid $server) survived netns_down"
leftovers=$(ip netns list | grep -c "^$prefix-" || true)
[ "$leftovers" -eq 0 ] || fail "$leftovers namespaces left behind"
ls -d /etc/netns/"$prefix"-* >/dev/null 2>&1 && fail "/etc/netns entries left behind"
echo "PASS: names resolve, traffic flows over the bridge, a cut isolates one host, cleanup is complete"
