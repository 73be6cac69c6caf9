// The pieces that make single-process training start and move exactly as the cluster does: the
// ps's initializers (same seed, name and full shape give the same values as the shards of any
// partitioning) and the ps's Keras optimizers applied to whole variables.
// Thread-safety: InitializeVariable is a pure function; an updater is used by one thread, except
// that ApplySparse calls for different tables may run at once (each touches only its table and
// slots; the optimizer is immutable).
#ifndef PSTRAIN_WORKER_LOCAL_KERAS_UPDATER_H_
#define PSTRAIN_WORKER_LOCAL_KERAS_UPDATER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "common/plan/model_variables.h"
#include "worker/local/local_trainer.h"

namespace pstrain {

// Initial value of the whole variable `var` (as a ps holding it unpartitioned would create it).
// InvalidArgument for an unknown initializer.
absl::Status InitializeVariable(const VariableSpec& var, uint64_t seed, Tensor* value);

// A ParameterUpdater running the ps's Keras optimizer with per-variable slots, counting steps.
// Embedding tables (VariableSpec::sparse) are updated by ApplySparse with the ps's own sparse-apply
// implementation (ps/store/sparse_apply.h): the same rows and slots change as on a cluster.
// Non-trainable variables (VariableSpec::trainable false) get their "gradient" added as is, as a ps
// adds it (Optimizer::Additive()), with no slots and no learning rate.
// A dynamic table (VariableSpec::dynamic) is a DynamicTable with the options a ps gives shard 0
// of 1 (DynamicShardSpecFromPlan): named after the variable, rows drawn from `seed` and the
// variable's initializer, its admission threshold and TTL, and the cap DynamicShardCap(max_rows, 1).
// InvalidArgument naming the field for a bad optimizer spec, or naming the table for one a
// DynamicTable refuses (e.g. adam, which updates every row: use lazy_adam).
absl::StatusOr<std::unique_ptr<ParameterUpdater>> NewKerasUpdater(const OptimizerSpec& optimizer,
                                                                  const std::vector<VariableSpec>& variables,
                                                                  uint64_t seed = 0);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_LOCAL_KERAS_UPDATER_H_
