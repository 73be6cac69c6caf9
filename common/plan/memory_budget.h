// Per-task memory budgets. What a task will hold is known before anything is allocated (a ps: its
// shards' values and optimizer slots; a process computing gradients: the model, its gradients,
// the data set and one batch's activations), so a job too large for its hosts is refused with the
// task, the bytes and how to raise the limit, instead of exhausting a host. The default budget is
// half of this host's memory: MemTotal in /proc/meminfo, or the cgroup's limit when lower (a
// container), read through the Env.
// Thread-safety: pure functions (the Env is only read).
#ifndef PSTRAIN_COMMON_PLAN_MEMORY_BUDGET_H_
#define PSTRAIN_COMMON_PLAN_MEMORY_BUDGET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/config/job_spec.h"
#include "common/plan/variable_planner.h"
#include "common/platform/env.h"

namespace pstrain {

// The flag every binary takes for its budget, as it appears in messages.
inline constexpr char kMemoryBudgetFlag[] = "--memory_budget_bytes";
// The budget used when the host's memory cannot be read.
inline constexpr int64_t kFallbackMemoryBudgetBytes = int64_t{8} << 30;

// Memory of this host available to the process: MemTotal of /proc/meminfo, lowered by the cgroup
// v2 (/sys/fs/cgroup/memory.max) or v1 (/sys/fs/cgroup/memory/memory.limit_in_bytes) limit.
// NotFound when /proc/meminfo cannot be read or has no MemTotal.
absl::StatusOr<int64_t> HostMemoryBytes(Env* env);

// `flag_bytes` when positive; otherwise half of HostMemoryBytes (kFallbackMemoryBudgetBytes when
// unreadable). InvalidArgument for a negative flag.
absl::StatusOr<int64_t> MemoryBudgetBytes(Env* env, int64_t flag_bytes);

// OK when bytes <= budget; otherwise InvalidArgument "<task> would hold <bytes> (<what>), more
// than its memory budget of <budget>; <how_to_fix>".
absl::Status CheckMemoryBudget(absl::string_view task, int64_t bytes, absl::string_view what, int64_t budget,
                               absl::string_view how_to_fix);

// Bytes of optimizer slots each ps task of `plan` holds: `slots` float32 elements per value
// element (checked arithmetic; InvalidArgument naming the shard or ps on overflow).
absl::StatusOr<std::vector<int64_t>> PsSlotBytes(const VariablePlan& plan, int slots);
// Bytes each ps task of `plan` holds for its dynamic shards beside their values and slots: each
// shard's cap (PlannedShard::rows) x kDynamicRowOverheadBytes, plus its admission filter
// (DynamicFilterBytes, dynamic_row_bytes.h).
absl::StatusOr<std::vector<int64_t>> PsDynamicOverheadBytes(const VariablePlan& plan);
// Bytes each ps task of `plan` holds: its shards' values plus PsSlotBytes plus
// PsDynamicOverheadBytes. A dynamic shard is budgeted full: cap x dim x 4 x (1 + slots) plus
// cap x kDynamicRowOverheadBytes plus its admission filter.
absl::StatusOr<std::vector<int64_t>> PsTaskBytes(const VariablePlan& plan, int slots);

// What a process computing the job's gradients holds, estimated: the variables and their
// gradients (plus `slots` optimizer slots each when it applies updates itself, as `pstrain train`),
// `examples_in_memory` examples of the data set, and the activations (forward and backward) of
// `batch` examples. An embedding table (VariableSpec::sparse) is held whole, with its slots, only
// by a process that applies updates (`applies_updates`); a cluster worker holds only the rows one
// step touches (at most batch rows per table: values and gradients). A dynamic table counts as its
// max_rows rows, plus kDynamicRowOverheadBytes each and its admission filter where it is held whole. InvalidArgument when a
// size overflows.
struct ComputeBytes {
  int64_t variables = 0, data = 0, activations = 0;
  int64_t total() const { return variables + data + activations; }
  std::string Describe() const;  // "1.2 GiB of variables, gradients and slots, 180 MiB of data, ..."
};
absl::StatusOr<ComputeBytes> EstimateComputeBytes(const ModelSpec& model, int64_t batch, int64_t examples_in_memory,
                                                  int slots, bool applies_updates);

// Training plus test examples a job's data set loads into memory (0 when unknown: csv files,
// whose reader is bounded by the file reader's limit instead).
int64_t ExamplesInMemory(const DataSpec& data);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLAN_MEMORY_BUDGET_H_
