#!/usr/bin/env bash
# One task of the pstrain.sbatch step (srun --multi-prog runs it with the task's binary): runs
# BINARY with the cluster from the step and the shared flags, its log in $RUN_DIR/logs/rank-N.log.
# The chief's exit status goes to $RUN_DIR/chief.rc, which the batch script waits for.
# Usage (from the --multi-prog file): task.sh BINARY [ARGS...]
set -uo pipefail
binary=$1
shift
args=(--slurm_tasks="$SLURM_TASKS_SPEC" --slurm_port_base="$PORT_BASE")
# LISTEN_HOST: listen there instead of on every interface (the task's port is the same).
[ -n "${LISTEN_HOST:-}" ] && args+=(--listen="$LISTEN_HOST:$((PORT_BASE + SLURM_LOCALID))")
log="$RUN_DIR/logs/rank-$SLURM_PROCID.log"
if [ "$(basename "$binary")" != pstrain-chief ] || [ "$SLURM_PROCID" != 0 ]; then
  exec "$binary" "${args[@]}" "$@" >>"$log" 2>&1
fi
rc=0
"$binary" "${args[@]}" "$@" >>"$log" 2>&1 || rc=$?
echo "$rc" >"$RUN_DIR/chief.rc"
exit "$rc"
