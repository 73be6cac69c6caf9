// Dynamic tables in a variable plan (VariablePlanProto.Variable.dynamic): the names of their shards
// and the DynamicShardSpecProto a ps creates each from. One shard per ps task: shard i of n lives
// on ps task i and holds the keys with DynamicKeyOwner(key, n) == i, at most DynamicShardCap rows.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_PLAN_DYNAMIC_SHARDS_H_
#define PSTRAIN_COMMON_PLAN_DYNAMIC_SHARDS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "proto/common.pb.h"
#include "proto/ps.pb.h"

namespace pstrain {

// "<variable>/dyn_<index>_of_<count>".
std::string DynamicShardName(const std::string& variable, int index, int count);

// Rows one of `count` shards may hold for a table of `max_rows`: ceil(max_rows / count), so the
// shards together hold at least max_rows; 0 (no cap) when max_rows <= 0. REQUIRES: count >= 1.
int64_t DynamicShardCap(int64_t max_rows, int count);

// The spec of shard `index` of dynamic `variable`: its name, the table's name, dim (shape[1]),
// the shard's initializer and seed, index of shards_size(), and the table's options with the
// shard's cap. InvalidArgument naming the variable when it is not a dynamic [rows, dim] table or
// `index` is not one of its shards.
absl::StatusOr<DynamicShardSpecProto> DynamicShardSpecFromPlan(const VariablePlanProto::Variable& variable,
                                                              int index);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLAN_DYNAMIC_SHARDS_H_
