#!/usr/bin/env bash
# ctest deploy_script_flags: the scripts of deploy/ take "--flag=value" as well as "--flag value"
# (deploy/args.sh): the helper's rewriting, and each script's parser reached through it (a
# value given as --flag=value is read as that flag's value, not refused as an unknown option).
#   deploy_script_flags_test.sh SOURCE_DIR
set -euo pipefail
src=$1
cd "$src"
fail() { echo "FAIL: $*"; exit 1; }

# The helper itself.
out=$(bash -c 'source deploy/args.sh; args_normalize "keep no-build" --steps=5 --job cnn --keep=true \
  --no-build=false --dir=a=b -- --x=1; printf "<%s>" "${ARGS[@]}"')
[ "$out" = "<--steps><5><--job><cnn><--keep><--dir><a=b><--><--x=1>" ] || fail "args_normalize gave $out"
if out=$(bash -c 'source deploy/args.sh; args_normalize "keep" --keep=maybe' 2>&1); then fail "--keep=maybe accepted"; fi
grep -q -- "--keep takes no value" <<<"$out" || fail "unexpected message: $out"

# Each script: --flag=value reaches its own checks (exit 2 with its message, nothing started).
set +e
out=$(bash deploy/local/demo.sh --no-build=true --workers=0 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && grep -q "need positive integers" <<<"$out" || fail "demo.sh --workers=0: exit $rc: $out"
for script in deploy/local/demo.sh deploy/local/supervise.sh deploy/docker/run-compose.sh deploy/docker/build-image.sh \
              deploy/netns/run-cluster.sh; do
  set +e
  out=$(bash "$script" --no-such-flag=1 2>&1); rc=$?
  set -e
  [ "$rc" = 2 ] && grep -qi "unknown .*--no-such-flag" <<<"$out" || fail "$script --no-such-flag=1: exit $rc: $out"
  bash "$script" --help=true >/dev/null || fail "$script --help=true failed"
done
set +e
out=$(bash deploy/local/supervise.sh --max_restarts=-1 -- true 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && grep -q "max_restarts \"-1\" must be an integer" <<<"$out" || fail "supervise.sh --max_restarts=-1: exit $rc: $out"
echo "PASS: deploy scripts take --flag=value (args.sh); unknown flags are named"
