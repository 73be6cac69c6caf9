// Wire forms the chief derives from a job spec: the update mode and the requests
// that create or restore each ps task's shards.
// Thread-safety: pure functions.
#ifndef PSTRAIN_CHIEF_COORDINATOR_JOB_PROTOS_H_
#define PSTRAIN_CHIEF_COORDINATOR_JOB_PROTOS_H_

#include <vector>

#include "common/config/job_spec.h"
#include "proto/common.pb.h"
#include "proto/ps.pb.h"

namespace pstrain {

UpdateMode UpdateModeOf(const JobSpec& spec);

// The shards of `plan` that live on ps task `ps_task`, in plan order.
std::vector<ShardSpecProto> ShardsOnPs(const VariablePlanProto& plan, int ps_task);

// CreateShards for ps task `ps_task`: its shards (primaries, then the backups it holds), the
// optimizer and the update settings.
// `initialize` false leaves the values for a Restore.
CreateShardsRequest MakeCreateShardsRequest(const JobSpec& spec, const VariablePlanProto& plan, int ps_task,
                                            int num_workers, bool initialize);

// Restore of `checkpoint_dir` into ps task `ps_task` under the current plan.
RestoreRequest MakeRestoreRequest(const JobSpec& spec, const VariablePlanProto& plan, int ps_task,
                                  int num_workers, const std::string& checkpoint_dir);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_COORDINATOR_JOB_PROTOS_H_
