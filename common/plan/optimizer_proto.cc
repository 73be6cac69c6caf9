#include "common/plan/optimizer_proto.h"

namespace pstrain {

OptimizerProto OptimizerProtoFromSpec(const OptimizerSpec& spec) {
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
  p.set_learning_rate_power(spec.learning_rate_power);
  p.set_l1(spec.l1);
  p.set_l2(spec.l2);
  p.set_l2_shrinkage(spec.l2_shrinkage);
  p.set_beta(spec.beta);
  return p;
}

}  // namespace pstrain
