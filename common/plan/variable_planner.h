// Turns a model's variables into shards with a partitioner and places them on ps tasks
// round-robin with ONE counter advanced in creation order over all variables (TensorFlow's
// ParameterServerStrategy placement). Shard i of variable v is "v/part_i"; a variable split into
// one shard keeps its own name. Shard sizes are always the div split; an embedding table
// (VariableSpec::sparse) under strategy "mod" gives shard i of n the rows i, i+n, ... instead of a
// contiguous range (row_offset i, row_stride n).
// A dynamic table (VariableSpec::dynamic) ignores the partitioner: it gets exactly one shard per ps
// task, shard i named DynamicShardName(v, i, n) on ps i with rows DynamicShardCap(max_rows, n) (its
// cap; bytes: that many rows' values), row_offset i and row_stride n (common/plan/dynamic_key_owner.h
// places its keys by hash, not by row). Its shards do not move the round-robin counter: the other
// variables are placed as if the table were not there.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_PLAN_VARIABLE_PLANNER_H_
#define PSTRAIN_COMMON_PLAN_VARIABLE_PLANNER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/plan/model_variables.h"
#include "common/plan/partitioner.h"
#include "proto/common.pb.h"

namespace pstrain {

struct PlannedShard {
  std::string name;
  int64_t row_offset = 0;  // global row of the shard's first row
  int64_t rows = 0;        // for rank-0 variables: 1
  int64_t row_stride = 1;  // global row of local row j: row_offset + j * row_stride
  int64_t bytes = 0;
  int ps = 0;
  int backup_ps = -1;  // the ps holding the shard's backup (ps_replicas 1), -1: none
};

struct PlannedVariable {
  VariableSpec variable;
  std::vector<PlannedShard> shards;
};

struct VariablePlan {
  std::vector<PlannedVariable> variables;
  std::vector<int64_t> ps_bytes;      // bytes held by each ps task (primaries and backups)
  std::vector<int64_t> backup_bytes;  // of which backups
  int num_ps = 0;
};

// REQUIRES nothing; returns InvalidArgument for num_ps < 1, duplicate variable names, anything
// NumShards rejects, or a dynamic variable that is not a sparse float32 [max_rows, dim] table
// (naming the variable).
absl::StatusOr<VariablePlan> PlanVariables(const std::vector<VariableSpec>& variables, const PartitionerSpec& spec,
                                           int num_ps);

// Gives every shard of `plan` `replicas` backups (0 or 1) on the ps after its primary,
// round-robin, and counts their bytes toward that ps (ps_bytes, backup_bytes). InvalidArgument
// when replicas > num_ps - 1 (a backup must live on another ps than its primary) or replicas > 1,
// or (replicas 1) when the plan has a dynamic table, naming it: dynamic shards have no backups.
absl::Status AddBackups(int64_t replicas, VariablePlan* plan);

// The wire form sent to workers and used to create shards; `seed` goes into every shard spec.
// A dynamic table's Variable has sparse and dynamic (DynamicTablePlanProto) set.
VariablePlanProto VariablePlanToProto(const VariablePlan& plan, uint64_t seed);

// Keras initializer spec as sent to the ps.
InitializerProto InitializerToProto(const InitializerSpec& spec);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLAN_VARIABLE_PLANNER_H_
