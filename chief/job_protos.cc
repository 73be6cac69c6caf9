#include "chief/job_protos.h"

#include "common/protocol_version.h"

namespace pstrain {

OptimizerProto OptimizerToProto(const OptimizerSpec& spec) {
  OptimizerProto p;
  p.set_type(spec.type);
  LearningRateProto* lr = p.mutable_learning_rate();
  lr->set_schedule(spec.learning_rate.schedule);
  lr->set_initial(spec.learning_rate.initial);
  lr->set_decay_steps(spec.learning_rate.decay_steps);
  lr->set_decay_rate(spec.learning_rate.decay_rate);
  lr->set_staircase(spec.learning_rate.staircase);
  for (int64_t b : spec.learning_rate.boundaries) lr->add_boundaries(b);
  for (double v : spec.learning_rate.values) lr->add_values(v);
  p.set_momentum(spec.momentum);
  p.set_nesterov(spec.nesterov);
  p.set_beta_1(spec.beta_1);
  p.set_beta_2(spec.beta_2);
  p.set_epsilon(spec.epsilon);
  p.set_initial_accumulator_value(spec.initial_accumulator_value);
  p.set_rho(spec.rho);
  p.set_centered(spec.centered);
  return p;
}

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

CreateShardsRequest MakeCreateShardsRequest(const JobSpec& spec, const VariablePlanProto& plan, int ps_task,
                                            int num_workers, bool initialize) {
  CreateShardsRequest r;
  r.set_protocol_version(kProtocolVersion);
  for (const ShardSpecProto& s : ShardsOnPs(plan, ps_task)) *r.add_shards() = s;
  *r.mutable_optimizer() = OptimizerToProto(spec.optimizer);
  r.set_mode(UpdateModeOf(spec));
  r.set_num_workers(num_workers);
  r.set_sync_timeout_ms(spec.sync_timeout_ms);
  r.set_non_finite(NON_FINITE_REJECT);
  r.set_initialize(initialize);
  return r;
}

RestoreRequest MakeRestoreRequest(const JobSpec& spec, const VariablePlanProto& plan, int ps_task,
                                  int num_workers, const std::string& checkpoint_dir) {
  RestoreRequest r;
  r.set_checkpoint_dir(checkpoint_dir);
  for (const ShardSpecProto& s : ShardsOnPs(plan, ps_task)) *r.add_shards() = s;
  *r.mutable_optimizer() = OptimizerToProto(spec.optimizer);
  r.set_mode(UpdateModeOf(spec));
  r.set_num_workers(num_workers);
  r.set_sync_timeout_ms(spec.sync_timeout_ms);
  r.set_non_finite(NON_FINITE_REJECT);
  return r;
}

}  // namespace pstrain
