#!/usr/bin/env bash
# A real Slurm on this machine: munged, slurmctld and slurmd (Debian's slurmctld, slurmd,
# slurm-client and munge), configured here in the test's own directory (node "localhost", loopback
# ports, its own munge key and socket, no cgroups). sbatch runs deploy/slurm/pstrain.sbatch, whose
# srun starts a 5-task step (rank 0 the chief, 1-2 ps, 3-4 workers); the tasks find their cluster
# from the step (--slurm_tasks, no TF_CONFIG) and train the demo's CNN for one epoch; worker:1 is
# killed mid-run and the job goes on: every step done, worker:1 named as lost, the demo's accuracy
# reached, the job's end the chief's status. The daemons are stopped by PID at the end. Exits 77
# (skip) when the daemons are not installed or cannot start here.
source "$(dirname "$0")/lib.sh" "$1"

INSTALL="apt-get install --no-install-recommends slurmctld slurmd slurm-client munge"
skip() {
  echo "SKIP: $*" >&2
  exit 77
}
for tool in munged slurmctld slurmd srun scancel sinfo; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (as root: $INSTALL)"
done
[ "$(id -u)" = 0 ] || skip "slurmd runs each task as the job's user: this test needs root"

S="$WORK/slurm"
mkdir -p "$S/munge" "$S/state" "$S/spool" "$S/log"
chmod 755 "$WORK" "$S" "$S/munge"  # munged wants its socket's directories open to all
head -c 1024 /dev/urandom >"$S/munge/munge.key"
chmod 400 "$S/munge/munge.key"
DAEMONS=()
JOB_ID=""
# Whether the job is still pending, running or ending.
job_active() { squeue -h -j "$JOB_ID" -t PD,CF,R,CG,S -o %i 2>/dev/null | grep -q .; }

# Stops the job (its tasks are slurmd's children), then the daemons, each by PID.
slurm_cleanup() {
  local pid i f
  if [ -n "$JOB_ID" ]; then scancel "$JOB_ID" 2>/dev/null || true; fi
  if [ -n "$JOB_ID" ]; then  # bounded: the daemons go next either way
    for ((i = 0; i < 100; i++)); do job_active || break; sleep 0.1; done
  fi
  for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do kill -TERM "${DAEMONS[$i]}" 2>/dev/null || true; done
  for pid in "${DAEMONS[@]}"; do
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  cleanup
}
trap slurm_cleanup EXIT

# Logs of the daemons, for a skip or failure.
daemon_logs() {
  local f
  for f in "$S"/log/* "$S"/munge/munged.log; do
    [ -f "$f" ] && { echo "---- $(basename "$f")"; tail -n 15 "$f"; }
  done
}

munged --foreground --key-file="$S/munge/munge.key" --socket="$S/munge/munge.socket" --pid-file="$S/munge/munged.pid" \
  --log-file="$S/munge/munged.log" --seed-file="$S/munge/munged.seed" >"$S/log/munged.out" 2>&1 &
DAEMONS+=($!)
for ((i = 0; i < 100; i++)); do [ -S "$S/munge/munge.socket" ] && break; sleep 0.1; done
[ -S "$S/munge/munge.socket" ] || skip "munged did not start here: $(daemon_logs)"

read -r CTLD_PORT SLURMD_PORT <<<"$(free_ports 2)"
cat >"$S/slurm.conf" <<EOF
ClusterName=pstrain-test
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge/munge.socket
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillOnBadExit=0
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF="$S/slurm.conf"
slurmctld -D -f "$SLURM_CONF" >"$S/log/slurmctld.out" 2>&1 &
DAEMONS+=($!)
slurmd -D -f "$SLURM_CONF" -N localhost >"$S/log/slurmd.out" 2>&1 &
DAEMONS+=($!)
state=""
for ((i = 0; i < 100; i++)); do
  state=$(sinfo -h -n localhost -o %t 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || skip "slurmctld and slurmd did not bring the node up here (state \"$state\"): $(daemon_logs)"
echo "slurm: munged, slurmctld and slurmd up (pids ${DAEMONS[*]}), node localhost idle"

# Five loopback ports in a row from the base: rank r listens at BASE + its local index (= r here).
BASE=""
for ((i = 0; i < 20; i++)); do
  candidate=$((20000 + RANDOM % 40000))
  if python3 - "$candidate" <<'PY'; then BASE=$candidate; break; fi
import socket, sys
base = int(sys.argv[1])
for p in range(base, base + 5):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        sys.exit(1)
    finally:
        s.close()
PY
done
[ -n "$BASE" ] || fail "no 5 free loopback ports in a row"

# The job: deploy/slurm/pstrain.sbatch as users submit it, on the one node, listening on loopback.
REPO="$(cd "$IT_DIR/../.." && pwd)"
RUN_DIR="$WORK/run"
MODEL="$RUN_DIR/model"
export PS=2 WORKERS=2 PSTRAIN_BIN="$BIN" RUN_DIR JOB=cnn EPOCHS=1 PORT_BASE=$BASE LISTEN_HOST=127.0.0.1
export DISTRIBUTION=block TASK_SH="$REPO/deploy/slurm/task.sh" WORKER_ARGS=--threads=1
export CHIEF_ARGS="--progress_secs=1 --wait_timeout_secs=60" STOP_GRACE_SECS=3
JOB_ID=$(env -u TF_CONFIG sbatch --parsable --nodes=1 --ntasks=5 --overcommit --output="$WORK/batch.log" \
  --export=ALL "$REPO/deploy/slurm/pstrain.sbatch") || fail "sbatch refused the job: $JOB_ID"
JOB_ID=${JOB_ID%%;*}
echo "slurm: job $JOB_ID submitted"
LOGS="$RUN_DIR/logs"
slurm_fail() {
  local f
  for f in "$LOGS"/rank-*.log "$WORK/batch.log"; do [ -f "$f" ] && { echo "---- $(basename "$f")"; tail -n 20 "$f"; }; done >&2
  daemon_logs >&2
  fail "$@"
}

for rank in 0 1 2 3 4; do
  for ((i = 0; i < 300; i++)); do grep -q "cluster from Slurm: rank $rank of 5 on localhost" "$LOGS/rank-$rank.log" 2>/dev/null && break; sleep 0.1; done
  grep -q "cluster from Slurm: rank $rank of 5 on localhost" "$LOGS/rank-$rank.log" 2>/dev/null \
    || slurm_fail "rank $rank did not start with its cluster from the step in 30 s"
done
grep -q "is chief:0 at localhost:$BASE (job $JOB_ID step 0, block distribution" "$LOGS/rank-0.log" \
  || slurm_fail "rank 0 is not the chief at localhost:$BASE"
grep -q "is worker:1 at localhost:$((BASE + 4))" "$LOGS/rank-4.log" || slurm_fail "rank 4 is not worker:1"
grep -q "ps: localhost:$((BASE + 1)), localhost:$((BASE + 2)); worker: localhost:$((BASE + 3)), localhost:$((BASE + 4))" \
  "$LOGS/rank-0.log" || slurm_fail "the chief's cluster is not the step's"

# worker:1 (rank 4) is killed once it has trained, as a node or process failure would: its PID is
# Slurm's word (scontrol listpids: PID JOBID STEPID LOCALID GLOBALID).
for ((i = 0; i < 900; i++)); do grep -Eq "closure [0-9]+: data part 1 batches [1-9][0-9]" "$LOGS/rank-4.log" && break; sleep 0.1; done
grep -Eq "closure [0-9]+: data part 1 batches [1-9][0-9]" "$LOGS/rank-4.log" || slurm_fail "worker:1 trained nothing in 90 s"
worker_pid=""
while read -r pid _ step _ global; do
  [ "$step" = 0 ] && [ "$global" = 4 ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = pstrain-worker ] && worker_pid=$pid
done < <(scontrol listpids "$JOB_ID" 2>/dev/null)
[ -n "$worker_pid" ] || slurm_fail "scontrol listpids names no pstrain-worker for rank 4: $(scontrol listpids "$JOB_ID" 2>&1)"
kill -9 "$worker_pid"
for ((i = 0; i < 600; i++)); do grep -q "lost worker:1" "$LOGS/rank-0.log" && break; sleep 0.1; done
grep -q "lost worker:1" "$LOGS/rank-0.log" || slurm_fail "the chief did not take worker:1 for lost in 60 s"
for ((i = 0; i < 2400; i++)); do job_active || break; sleep 0.1; done
job_active && slurm_fail "the job did not end in 240 s"
[ -s "$RUN_DIR/chief.rc" ] || slurm_fail "the job ended without the chief's status"
[ "$(cat "$RUN_DIR/chief.rc")" = 0 ] || slurm_fail "the chief exited with $(cat "$RUN_DIR/chief.rc")"
grep -q "the chief exited with 0" "$WORK/batch.log" || slurm_fail "the batch script did not end with the chief's status"

steps=$(json_get "$MODEL/summary.json" "d['global_step']")
[ "$steps" = 938 ] || slurm_fail "the job did $steps steps, not one epoch's 938"
json_get "$MODEL/summary.json" "'worker:1' in ' '.join(d['lost_workers'])" | grep -q True \
  || slurm_fail "summary does not name worker:1 as lost"
accuracy=$(json_get "$MODEL/summary.json" "d['final_test_accuracy']")
# The demo (deploy/local/demo.sh: the same CNN, 2 ps, 2 async workers, one epoch) ended at 85.1% test
# accuracy here, this test's runs at 87.1%: the order async updates land in varies it. 83% is below
# that spread and far above what a broken training reaches.
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.83 else 1)" "$accuracy" \
  || slurm_fail "test accuracy $accuracy after one epoch, below the demo's 0.83"
echo "PASS: deploy/slurm/pstrain.sbatch (job $JOB_ID, 5 tasks by srun) trained the CNN for one epoch ($steps steps)" \
  "to test accuracy $accuracy after losing worker:1"
