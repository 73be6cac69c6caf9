// What the chief, the ps and `pstrain train` agree on about a job's optimizer before any shard
// exists: its Keras defaults and argument checks, and the slot tensors it keeps beside each variable.
// The ps builds its optimizers from these (ps/store/optimizer.h); the chief needs only the slot
// count (memory plans), so it never links the ps store.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_PLAN_OPTIMIZER_DEFAULTS_H_
#define PSTRAIN_COMMON_PLAN_OPTIMIZER_DEFAULTS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "proto/common.pb.h"

namespace pstrain {

// Fills every zero field of `p` that means "Keras default" (ps/store/optimizer.h lists them) and
// checks the rest: InvalidArgument naming the field for an unknown type or schedule, a non-positive
// learning rate or epsilon, a negative momentum or Ftrl argument, a decay without decay_steps, or
// piecewise values not boundaries+1 long.
absl::Status FillOptimizerDefaults(OptimizerProto* p);

// Names of the per-element state tensors the optimizer keeps beside a shard, in the order shards
// store them. REQUIRES: `filled` went through FillOptimizerDefaults.
std::vector<std::string> OptimizerSlotNames(const OptimizerProto& filled);

// How many slot tensors (each the size of the variable) the spec's optimizer keeps per variable;
// FillOptimizerDefaults' errors otherwise.
absl::StatusOr<int> OptimizerSlotCount(const OptimizerSpec& spec);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLAN_OPTIMIZER_DEFAULTS_H_
