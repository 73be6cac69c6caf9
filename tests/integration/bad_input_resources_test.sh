#!/usr/bin/env bash
# Resources that run out are errors, not aborts (common/platform/resource_errors.h): a thread that
# cannot be created or an allocation that fails ends the process with a message naming what ran
# out and how to make room, exit 1, never std::terminate (SIGABRT, exit 134).
source "$(dirname "$0")/lib.sh" "$1"
P="$BIN/pstrain"
CASES=0
# A sanitizer's runtime reserves terabytes of address space: address-space limits cannot apply.
if grep -qa "AddressSanitizer\|ThreadSanitizer" "$P"; then
  echo "SKIP: $P is built with a sanitizer"
  exit 77
fi

# Threads: every thread's stack is RLIMIT_STACK (4 GiB here) of address space, within 10 GiB in
# all, so the compute pool's third thread cannot be created.
expect_exit 1 no-threads "pstrain: cannot create a thread or take a system resource: .*ulimit -u" \
  bash -c 'ulimit -s 4194304 && ulimit -v 10485760 && exec "$0" train --job=linear --threads=8 --steps=5' "$P"

# Memory: a model of 2 GiB of weights (within the host's default budget) under 1.5 GiB of address space.
write_job "$WORK/big.json" '{"model": {"input_shape": [4096], "loss": "mse",
  "layers": [{"type": "dense", "units": 131072}, {"type": "dense", "units": 1}]},
  "optimizer": {"type": "sgd", "learning_rate": 0.01}, "data": {"dataset": "synthetic_linear", "num_examples": 64},
  "batch_size": 8, "schedule": {"steps": 1}}'
expect_exit 1 no-memory "pstrain: out of memory: an allocation failed" \
  bash -c 'ulimit -v 1572864 && exec "$0" train --job="$1" --threads=1 --memory_budget_bytes=$((64 << 30))' "$P" "$WORK/big.json"
echo "PASS: $CASES cases: threads and memory that run out are named errors, exit 1"
