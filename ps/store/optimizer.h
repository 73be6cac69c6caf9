// Keras optimizers applied next to a shard (on a ps, or in one process by `pstrain train`):
// SGD (momentum, Nesterov), Adagrad, Adam, RMSprop with the formulas of Keras 3 / tf.keras >= 2.11:
//   sgd:      m = momentum*m - lr*g;  w += nesterov ? momentum*m - lr*g : m   (w -= lr*g if momentum 0)
//   adagrad:  a += g^2;  w -= lr*g / sqrt(a + eps)                    (a starts at 0.1)
//   adam:     m += (g-m)(1-b1); v += (g^2-v)(1-b2); w -= lr*sqrt(1-b2^t)/(1-b1^t) * m/(sqrt(v)+eps)
//   rmsprop:  v = rho*v + (1-rho)g^2; [centered: a = rho*a + (1-rho)g, den = v - a^2 + eps] else
//             den = v + eps; inc = lr*g/sqrt(den); momentum>0: mom = momentum*mom + inc, w -= mom;
//             else w -= inc
//   ftrl:     Keras's Ftrl (ps/store/ftrl_optimizer.h)
//   lazy_adam: adam's formula; on an embedding table only the touched rows (ps/store/sparse_apply.h)
// with t = step + 1, and the learning rate scheduled by `step` (the updates already applied to the
// shard, Keras's `iterations`): constant, exponential_decay (initial * rate^(step/decay_steps),
// floored when staircase) or piecewise_constant (values[i] while step <= boundaries[i]).
// Proto3 fields cannot be absent, so a zero means "Keras default" for: learning rate (sgd 0.01,
// others 0.001), beta_1 (0.9), beta_2 (0.999), epsilon (1e-7), rho (0.9) and Adagrad's
// initial_accumulator_value (0.1); ftrl's learning_rate_power is optional (absent: -0.5).
// OptimizerProtoFromSpec (common/plan/optimizer_proto.h) fills every field explicitly.
// Additive() is no optimizer but the update of a non-trainable variable (BatchNormalization's
// moving statistics): values += grad, the push being the delta itself, with no learning rate and no
// slots (TensorFlow's assign_moving_average on a ps: var -= (var - value) * (1 - momentum)).
// Thread-safety: an Optimizer is immutable after Create; Apply is safe to call concurrently on
// different (values, slots).
#ifndef PSTRAIN_PS_STORE_OPTIMIZER_H_
#define PSTRAIN_PS_STORE_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/plan/optimizer_defaults.h"
#include "common/plan/optimizer_proto.h"
#include "proto/common.pb.h"

namespace pstrain {

class Optimizer {
 public:
  // InvalidArgument naming the field for an unknown type or schedule, a non-positive learning
  // rate or epsilon, a decay without decay_steps, or piecewise values not boundaries+1 long.
  static absl::StatusOr<std::unique_ptr<Optimizer>> Create(const OptimizerProto& proto);
  // The update of non-trainable variables: adds the push to the values; no slots. Shared, immutable.
  static std::shared_ptr<const Optimizer> Additive();

  virtual ~Optimizer() = default;

  // The proto with every Keras default filled in.
  const OptimizerProto& config() const { return config_; }
  // Names of the per-element state tensors kept beside a shard ("m", "v", "accumulator", ...),
  // as common/plan/optimizer_defaults.h lists them for every optimizer.
  virtual std::vector<std::string> SlotNames() const { return OptimizerSlotNames(config_); }
  // Value every element of slot `i` starts from.
  virtual float SlotInitialValue(int i) const { return 0.0f; }

  // Learning rate for the update that follows `step` applied updates.
  double LearningRate(int64_t step) const;

  // One update of `values` with `grad`. REQUIRES: grad, values and every slot have the same size;
  // slots.size() == SlotNames().size(); `step` = updates already applied.
  virtual void Apply(absl::Span<const float> grad, absl::Span<float> values, absl::Span<const absl::Span<float>> slots,
                     int64_t step) const = 0;

 protected:
  explicit Optimizer(OptimizerProto config) : config_(std::move(config)) {}

 private:
  OptimizerProto config_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_OPTIMIZER_H_
