#include "chief/coordinator/job_protos.h"

#include "common/plan/dynamic_shards.h"
#include "common/plan/optimizer_proto.h"
#include "common/platform/status_macros.h"
#include "common/wire/protocol_version.h"

namespace pstrain {

UpdateMode UpdateModeOf(const JobSpec& spec) { return spec.mode == "sync" ? UPDATE_SYNC : UPDATE_ASYNC; }

std::vector<ShardSpecProto> ShardsOnPs(const VariablePlanProto& plan, int ps_task) {
  std::vector<ShardSpecProto> out;
  for (const auto& variable : plan.variables()) {
    if (variable.has_dynamic()) continue;
    for (const ShardSpecProto& shard : variable.shards()) {
      if (shard.ps_task() == ps_task) out.push_back(shard);
    }
  }
  return out;
}

absl::StatusOr<std::vector<DynamicShardSpecProto>> DynamicShardsOnPs(const VariablePlanProto& plan, int ps_task) {
  std::vector<DynamicShardSpecProto> out;
  for (const auto& variable : plan.variables()) {
    if (!variable.has_dynamic()) continue;
    for (int i = 0; i < variable.shards_size(); ++i) {
      if (variable.shards(i).ps_task() != ps_task) continue;
      ASSIGN_OR_RETURN(DynamicShardSpecProto spec, DynamicShardSpecFromPlan(variable, i));
      out.push_back(std::move(spec));
    }
  }
  return out;
}

namespace {

// The shard settings CreateShards and Restore share (the two requests name these fields alike).
template <typename Request>
absl::Status SetShardsAndUpdates(const JobSpec& spec, const VariablePlanProto& plan, int ps_task, int num_workers,
                                 Request* r) {
  for (const ShardSpecProto& s : ShardsOnPs(plan, ps_task)) *r->add_shards() = s;
  ASSIGN_OR_RETURN(std::vector<DynamicShardSpecProto> dynamic, DynamicShardsOnPs(plan, ps_task));
  for (DynamicShardSpecProto& s : dynamic) *r->add_dynamic_shards() = std::move(s);
  // ps_replicas: the backups this ps holds, created (or restored) like the primaries. Dynamic
  // tables have none (refused with ps_replicas when the job is read).
  for (const auto& variable : plan.variables()) {
    if (variable.has_dynamic()) continue;
    for (const ShardSpecProto& s : variable.shards()) {
      if (s.has_backup_ps() && s.backup_ps() == ps_task) *r->add_shards() = s;
    }
  }
  *r->mutable_optimizer() = OptimizerProtoFromSpec(spec.optimizer);
  r->set_mode(UpdateModeOf(spec));
  r->set_num_workers(num_workers);
  r->set_sync_timeout_ms(spec.sync_timeout_ms);
  // TerminateOnNaN: a non-finite gradient fails its push and a non-finite shard is never saved;
  // with it off the job goes on, skipping (and counting) such gradients.
  r->set_non_finite(spec.terminate_on_nan ? NON_FINITE_REJECT : NON_FINITE_SKIP);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CreateShardsRequest> MakeCreateShardsRequest(const JobSpec& spec, const VariablePlanProto& plan,
                                                            int ps_task, int num_workers, bool initialize) {
  CreateShardsRequest r;
  r.set_protocol_version(kProtocolVersion);
  RETURN_IF_ERROR(SetShardsAndUpdates(spec, plan, ps_task, num_workers, &r));
  r.set_initialize(initialize);
  return r;
}

absl::StatusOr<RestoreRequest> MakeRestoreRequest(const JobSpec& spec, const VariablePlanProto& plan, int ps_task,
                                                  int num_workers, const std::string& checkpoint_dir) {
  RestoreRequest r;
  r.set_checkpoint_dir(checkpoint_dir);
  RETURN_IF_ERROR(SetShardsAndUpdates(spec, plan, ps_task, num_workers, &r));
  return r;
}

}  // namespace pstrain
