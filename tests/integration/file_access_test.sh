#!/usr/bin/env bash
# No bad input makes pstrain read or write anything outside the model dir and the files it names:
# the bad cases of the other bad-input tests run under strace with a fresh HOME and TMPDIR, and
# every file the binaries open, create, rename or remove is checked: writes only inside the model
# dir, reads only of the model dir, the named files and the system's own (libraries, /proc, /sys,
# resolver files); never the files a hostile checkpoint points at.
source "$(dirname "$0")/lib.sh" "$1"
command -v strace >/dev/null || fail "strace is not installed (deploy/install-deps.sh installs it)"
if ! strace -qq -o /dev/null true 2>"$WORK/strace-probe.log"; then
  echo "SKIP: strace cannot trace processes here (ptrace not permitted?): $(cat "$WORK/strace-probe.log")" >&2
  exit 77
fi
P="$BIN/pstrain"
M="$WORK/model"
export HOME="$WORK/home" TMPDIR="$WORK/tmp"
mkdir -p "$HOME" "$TMPDIR" "$WORK/outside"
echo "outside the checkpoint" >"$WORK/outside/secret.shard"

train_linear "$M" 40
[ "$TRAIN_RC" = 0 ] || fail "training failed: $(tail -5 "$WORK/chief-0.log")"
save_pristine "$M"
TRACED=()
# traced NAME WRITE_ROOT FORBIDDEN CODE COMMAND...: runs COMMAND under strace, expects exit CODE;
# the trace is checked afterwards against WRITE_ROOT (the only place writes may go) and FORBIDDEN
# (colon-separated paths that must never be opened).
traced() {
  local name=$1 root=$2 forbidden=$3 code=$4 rc=0
  shift 4
  strace -f -qq -o "$WORK/trace-$name" -e trace=open,openat,creat,truncate,mkdir,mkdirat,rename,renameat,renameat2,unlink,unlinkat,rmdir,link,linkat,symlink,symlinkat,chmod,fchmodat \
    "$@" >"$WORK/$name.log" 2>&1 || rc=$?
  [ "$rc" = "$code" ] || fail "$name: exit $rc, expected $code: $(head -c 2000 "$WORK/$name.log")"
  TRACED+=("$name|$root|$forbidden")
}
edit_index() {  # edit_index CKPT PYTHON_STATEMENT (on the parsed index `d`)
  python3 - "$1/index.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[2])
json.dump(d, open(sys.argv[1], "w"))
PY
}

restore_pristine
edit_index "$M/ckpt-40" 'for s in d["shards"]: s["file"] = "../../outside/secret.shard"'
traced climb "$M" "$WORK/outside/secret.shard" 2 "$P" inspect --checkpoint="$M/ckpt-40"
traced climb-eval "$M" "$WORK/outside/secret.shard" 2 "$P" evaluate --checkpoint="$M/ckpt-40" --job=linear
restore_pristine
edit_index "$M/ckpt-40" 'for s in d["shards"]: s["file"] = "/etc/passwd"'
traced absolute "$M" "/etc/passwd" 2 "$P" inspect --checkpoint="$M/ckpt-40"
restore_pristine
for f in "$M"/ckpt-40/*.shard; do cp "$f" "$WORK/outside/$(basename "$f")"; rm "$f"; ln -s "$WORK/outside/$(basename "$f")" "$f"; done
forbidden=$(ls "$WORK"/outside/*.shard | tr '\n' ':')
traced symlink "$M" "$forbidden" 2 "$P" inspect --checkpoint="$M/ckpt-40"
traced symlink-eval "$M" "$forbidden" 0 "$P" evaluate --checkpoint="$M" --job=linear
restore_pristine
edit_index "$M/ckpt-40" 'd["job_spec"]["data"] = {"dataset": "csv", "train_file": "/etc/group", "test_file": "/etc/passwd"}'
traced user-data "$M" "/etc/passwd" 0 "$P" evaluate --checkpoint="$M/ckpt-40" --job=linear
python3 -c "import sys; p=sys.argv[1]; t=open(p).read(); open(p,'w').write(t.replace('\"job_spec\":', '\"job_spec\": ' + '['*100000 + ']'*100000 + ', \"x\":', 1))" "$M/ckpt-40/index.json"
traced nested-index "$M" "" 2 "$P" inspect --checkpoint="$M/ckpt-40"

# The chief over unusable checkpoints, and over an earlier run with --restore=false: it writes
# nothing but its own model dir (and only what it appends there), reads nothing else of the user's.
restore_pristine
for f in "$M"/ckpt-*/*.shard; do truncate -s 2 "$f"; done
make_cluster 1 1
start_servers 1 1 --threads=1
traced chief-unusable "$M" "$WORK/outside/secret.shard" 2 env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" \
  --job=linear --steps=60 --model_dir="$M" --wait_timeout_secs=30
restore_pristine
make_cluster 1 1
start_servers 1 1 --threads=1
traced chief-restore-false "$M" "" 2 env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" \
  --job=linear --steps=60 --model_dir="$M" --restore=false --wait_timeout_secs=30

# A job that diverges after step 40: the chief writes only inside its model dir (and keeps the
# good checkpoints there); `pstrain train` writes nothing. --start_over moves the earlier run aside
# inside the model dir.
write_job "$WORK/late.json" '{"model": {"input_shape": [2], "loss": "mse", "layers": [{"type": "dense", "units": 1}]},
  "optimizer": {"type": "sgd", "learning_rate": {"schedule": "piecewise_constant", "boundaries": [40], "values": [0.01, 1e30]}},
  "data": {"dataset": "synthetic_linear", "num_examples": 2048}, "batch_size": 64, "schedule": {"steps": 200, "steps_per_closure": 5}}'
make_cluster 1 1
start_servers 1 1 --threads=1
traced chief-diverged "$WORK/late" "" 2 env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" \
  --job="$WORK/late.json" --model_dir="$WORK/late" --checkpoint_every_steps=20 --wait_timeout_secs=30
traced train-diverged "/nonexistent" "" 2 "$P" train --job="$WORK/late.json"
restore_pristine
make_cluster 1 1
start_servers 1 1 --threads=1
traced start-over "$M" "" 0 env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" \
  --job=linear --steps=20 --model_dir="$M" --start_over --wait_timeout_secs=30

# Bad job specs, flags and sizes: nothing is written at all.
echo "{\"model\": $(nested 100000)}" >"$WORK/deep.json"
traced deep-job "/nonexistent" "" 2 "$P" train --job="$WORK/deep.json"
traced huge-plan "/nonexistent" "" 2 "$P" plan --shape=4294967296,4294967296 --num_ps=1
traced bad-flag "/nonexistent" "" 2 env TF_CONFIG="$(tf_config ps 0)" "$BIN/pstrain-ps" --memory_budget_bytes=x

cat >"$WORK/check.py" <<'PY'
import os, re, sys
work = sys.argv[1]
# The system's own files a process may read: libraries, locale, resolver and /proc, /sys, /dev.
system = ("/usr/", "/lib", "/etc/ld.so", "/etc/localtime", "/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf",
          "/etc/host.conf", "/etc/gai.conf", "/etc/services", "/proc/", "/sys/", "/dev/", "/etc/ssl/", "/etc/gss/",
          "/etc/grpc", "/etc/protocols")
write_calls = {"creat", "truncate", "mkdir", "mkdirat", "rename", "renameat", "renameat2", "unlink", "unlinkat",
               "rmdir", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmodat"}
line_re = re.compile(r'^(\d+\s+)?(\w+)\((?:AT_FDCWD, |\d+, )?"([^"]*)"(.*)$')
bad = 0
for spec in sys.argv[2:]:
    name, root, forbidden = spec.split("|")
    forbidden = [f for f in forbidden.split(":") if f]
    for line in open(os.path.join(work, "trace-" + name)):
        m = line_re.match(line)
        if not m:
            continue
        call, path, rest = m.group(2), m.group(3), m.group(4)
        if "ENOENT" in rest and call in ("open", "openat"):
            continue  # a probe of a file that does not exist reads nothing
        path = os.path.normpath(path if path.startswith("/") else os.path.join(work, path))
        writes = call in write_calls or re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", rest)
        problem = None
        if any(path == f or path.startswith(f + "/") for f in forbidden):
            problem = "opened a file a hostile input points at"
        elif writes and not (path == root or path.startswith(root + "/")):
            problem = "wrote outside the model dir"
        elif not writes and not path.startswith(work + "/") and path != work and not path.startswith(system):
            problem = "read outside the model dir and the files it names"
        if problem:
            bad += 1
            print("%s: %s: %s" % (name, problem, line.strip()))
for d in ("home", "tmp"):
    if os.listdir(os.path.join(work, d)):
        bad += 1
        print("something was written under $%s: %s" % (d.upper(), os.listdir(os.path.join(work, d))))
print("checked %d traced runs" % (len(sys.argv) - 2))
sys.exit(1 if bad else 0)
PY
# The checker itself: a control run that reads a forbidden file and writes under $HOME is caught.
strace -f -qq -o "$WORK/trace-control" -e trace=open,openat,creat cat "$WORK/outside/secret.shard" >/dev/null
python3 "$WORK/check.py" "$WORK" "control|$M|$WORK/outside/secret.shard" >"$WORK/control.log" && \
  fail "the trace check did not catch a read of a forbidden file: $(cat "$WORK/control.log")"
grep -q "opened a file a hostile input points at" "$WORK/control.log" || fail "control: $(cat "$WORK/control.log")"
python3 "$WORK/check.py" "$WORK" "${TRACED[@]}" || fail "a bad input touched files it must not (above)"
echo "PASS: ${#TRACED[@]} bad inputs traced: no file outside the model dir and the named files was touched"
