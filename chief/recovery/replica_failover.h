// ReplicaFailover: what the chief does, with ps_replicas 1, when it lost a ps: the backups of that
// ps's shards (on the next ps) become their primaries, the shards it backed up go on without a
// backup, and every worker is told where each shard lives now (WorkerService.Reassign). Training
// goes on at once, without waiting for the lost ps to come back, and no update a ps acknowledged
// is lost (a primary answers a push only once its backup has it; ps/store/replica_link.h).
// Thread-safety: pure functions, and FailOver makes blocking calls on the clients it is given
// (call it from one thread at a time).
#ifndef PSTRAIN_CHIEF_RECOVERY_REPLICA_FAILOVER_H_
#define PSTRAIN_CHIEF_RECOVERY_REPLICA_FAILOVER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/platform/env.h"
#include "proto/common.pb.h"
#include "ps/client/ps_client.h"
#include "worker/client/worker_client.h"

namespace pstrain {

// `plan` after losing ps task `lost`: its shards live on their backups (ps_task = backup_ps, no
// backup any more), and the shards it backed up have none. FailedPrecondition naming the first
// shard of `lost` without a backup (nothing to promote: restart-based recovery is needed);
// InvalidArgument for `lost` outside the plan's ps tasks.
absl::StatusOr<VariablePlanProto> PlanAfterLoss(const VariablePlanProto& plan, int lost);

// `plan` once ps task `back` (lost earlier, now answering) backs up again every shard that has no
// backup and does not live on it.
VariablePlanProto PlanWithBackupsOn(const VariablePlanProto& plan, int back);

// The shards of `plan` backed up on `back` whose primary is `primary`.
std::vector<std::string> BackupsOf(const VariablePlanProto& plan, int primary, int back);

// Shards of `plan` whose primary is ps task `ps`.
int PrimariesOn(const VariablePlanProto& plan, int ps);

struct FailoverReport {
  int lost_ps = -1;
  int promoted = 0;  // shards whose backup is their primary now
  int unbacked = 0;  // shards that lost their backup
  int workers_told = 0;
  std::vector<std::string> notes;  // workers that could not be told (they get the plan when configured again)
  double seconds = 0;              // from the call to the last worker told
  std::string Describe() const;
};

// Promotes on every ps but `lost` (Promote), then reroutes every worker (Reassign with
// `new_plan`, from PlanAfterLoss). A ps that refuses or cannot be reached fails the failover
// (naming it: its shards would have no owner); a worker that cannot be reached is noted and
// skipped. `timeout_ms` bounds each worker call.
absl::StatusOr<FailoverReport> FailOver(int lost, const VariablePlanProto& new_plan, const std::vector<PsClient*>& ps,
                                        const std::vector<WorkerClient*>& workers, Env* env, int64_t timeout_ms);

// Makes ps task `back` (answering again, empty) the backup of the shards `new_plan` (from
// PlanWithBackupsOn) backs up there: `create` (its CreateShards, initialize false: the backups
// wait for their state) on it, then AttachBackup on each primary, which sends each shard's state
// and forwards every later update. Returns how many shards it backs up; errors name the ps.
absl::StatusOr<int> Rejoin(int back, const VariablePlanProto& new_plan, const CreateShardsRequest& create,
                           const std::vector<PsClient*>& ps);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_RECOVERY_REPLICA_FAILOVER_H_
