#include "common/plan/dynamic_shards.h"

#include "absl/strings/str_cat.h"

namespace pstrain {

std::string DynamicShardName(const std::string& variable, int index, int count) {
  return absl::StrCat(variable, "/dyn_", index, "_of_", count);
}

int64_t DynamicShardCap(int64_t max_rows, int count) {
  if (max_rows <= 0) return 0;
  return max_rows / count + (max_rows % count != 0 ? 1 : 0);
}

absl::StatusOr<DynamicShardSpecProto> DynamicShardSpecFromPlan(const VariablePlanProto::Variable& variable,
                                                              int index) {
  if (!variable.has_dynamic() || variable.shape_size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable ", variable.name(), " is not a dynamic [rows, dim] table in the plan"));
  }
  const int count = variable.shards_size();
  if (index < 0 || index >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamic table ", variable.name(), " has ", count, " shards, not a shard ", index));
  }
  const ShardSpecProto& shard = variable.shards(index);
  DynamicShardSpecProto spec;
  spec.set_shard_name(shard.shard_name());
  spec.set_table_name(variable.name());
  spec.set_dim(variable.shape(1));
  *spec.mutable_initializer() = shard.initializer();
  spec.set_seed(shard.seed());
  spec.set_shard_index(index);
  spec.set_num_shards(count);
  spec.set_admission_threshold(variable.dynamic().admission_threshold());
  spec.set_ttl_steps(variable.dynamic().ttl_steps());
  spec.set_max_rows(DynamicShardCap(variable.dynamic().max_rows(), count));
  return spec;
}

}  // namespace pstrain
