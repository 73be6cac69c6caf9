// Wire forms the chief derives from a job spec: the update mode and the requests
// that create or restore each ps task's shards.
// Thread-safety: pure functions.
#ifndef PSTRAIN_CHIEF_COORDINATOR_JOB_PROTOS_H_
#define PSTRAIN_CHIEF_COORDINATOR_JOB_PROTOS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "proto/common.pb.h"
#include "proto/ps.pb.h"

namespace pstrain {

UpdateMode UpdateModeOf(const JobSpec& spec);

// The dense and table shards of `plan` that live on ps task `ps_task`, in plan order; never the
// shards of a dynamic table (VariablePlanProto.Variable.dynamic), which DynamicShardsOnPs gives.
std::vector<ShardSpecProto> ShardsOnPs(const VariablePlanProto& plan, int ps_task);

// The dynamic table shards of `plan` on ps task `ps_task` (shard i of each table lives on ps task
// i), as the ps creates them (DynamicShardSpecFromPlan). InvalidArgument naming the variable when
// the plan holds a malformed dynamic table.
absl::StatusOr<std::vector<DynamicShardSpecProto>> DynamicShardsOnPs(const VariablePlanProto& plan, int ps_task);

// CreateShards for ps task `ps_task`: its shards (primaries, then the backups it holds), its
// dynamic table shards, the optimizer and the update settings.
// `initialize` false leaves the values for a Restore. Errors as DynamicShardsOnPs.
absl::StatusOr<CreateShardsRequest> MakeCreateShardsRequest(const JobSpec& spec, const VariablePlanProto& plan,
                                                            int ps_task, int num_workers, bool initialize);

// Restore of `checkpoint_dir` into ps task `ps_task` under the current plan: the dynamic shards
// too, which the ps re-shards from the table's files whatever ps count saved them. Errors as
// DynamicShardsOnPs.
absl::StatusOr<RestoreRequest> MakeRestoreRequest(const JobSpec& spec, const VariablePlanProto& plan, int ps_task,
                                                  int num_workers, const std::string& checkpoint_dir);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_COORDINATOR_JOB_PROTOS_H_
