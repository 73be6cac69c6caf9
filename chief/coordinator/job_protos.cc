#include "chief/coordinator/job_protos.h"

#include "common/plan/optimizer_proto.h"
#include "common/wire/protocol_version.h"

namespace pstrain {

UpdateMode UpdateModeOf(const JobSpec& spec) { return spec.mode == "sync" ? UPDATE_SYNC : UPDATE_ASYNC; }

std::vector<ShardSpecProto> ShardsOnPs(const VariablePlanProto& plan, int ps_task) {
  std::vector<ShardSpecProto> out;
  for (const auto& variable : plan.variables()) {
    for (const ShardSpecProto& shard : variable.shards()) {
      if (shard.ps_task() == ps_task) out.push_back(shard);
    }
  }
  return out;
}

namespace {

// The shard settings CreateShards and Restore share (the two requests name these fields alike).
template <typename Request>
void SetShardsAndUpdates(const JobSpec& spec, const VariablePlanProto& plan, int ps_task, int num_workers,
                         Request* r) {
  for (const ShardSpecProto& s : ShardsOnPs(plan, ps_task)) *r->add_shards() = s;
  // ps_replicas: the backups this ps holds, created (or restored) like the primaries.
  for (const auto& variable : plan.variables()) {
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
}

}  // namespace

CreateShardsRequest MakeCreateShardsRequest(const JobSpec& spec, const VariablePlanProto& plan, int ps_task,
                                            int num_workers, bool initialize) {
  CreateShardsRequest r;
  r.set_protocol_version(kProtocolVersion);
  SetShardsAndUpdates(spec, plan, ps_task, num_workers, &r);
  r.set_initialize(initialize);
  return r;
}

RestoreRequest MakeRestoreRequest(const JobSpec& spec, const VariablePlanProto& plan, int ps_task,
                                  int num_workers, const std::string& checkpoint_dir) {
  RestoreRequest r;
  r.set_checkpoint_dir(checkpoint_dir);
  SetShardsAndUpdates(spec, plan, ps_task, num_workers, &r);
  return r;
}

}  // namespace pstrain
