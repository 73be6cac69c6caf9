#include "ps/store/ftrl_optimizer.h"

#include <algorithm>
#include <cmath>

namespace pstrain {
namespace {

class Ftrl : public Optimizer {
 public:
  explicit Ftrl(OptimizerProto config) : Optimizer(std::move(config)) {}

  float SlotInitialValue(int i) const override {
    return i == 0 ? static_cast<float>(config().initial_accumulator_value()) : 0.0f;
  }

  void Apply(absl::Span<const float> g, absl::Span<float> w, absl::Span<const absl::Span<float>> slots,
             int64_t step) const override {
    const float* __restrict gp = g.data();
    float* __restrict wp = w.data();
    float* __restrict n = slots[0].data();
    float* __restrict z = slots[1].data();
    const double lr = LearningRate(step);
    const float inv_lr = static_cast<float>(1.0 / lr);
    const float power = static_cast<float>(-config().learning_rate_power());
    const float two_l2 = static_cast<float>(2.0 * (config().l2() + config().beta() / (2.0 * lr)));
    const float two_shrinkage = static_cast<float>(2.0 * config().l2_shrinkage());
    const float l1 = static_cast<float>(config().l1());
    // -0.5, the default, is a square root: exact and several times faster than pow.
    const bool sqrt_power = config().learning_rate_power() == -0.5;
    auto scale = [&](float x) { return sqrt_power ? std::sqrt(x) : std::pow(x, power); };
    for (size_t i = 0, size = w.size(); i < size; ++i) {
      const float shrunk = gp[i] + two_shrinkage * wp[i];
      const float n_new = n[i] + gp[i] * gp[i];
      const float scaled_new = scale(n_new);
      z[i] += shrunk - (scaled_new - scale(n[i])) * inv_lr * wp[i];
      const float quadratic = scaled_new * inv_lr + two_l2;
      wp[i] = (std::clamp(z[i], -l1, l1) - z[i]) / quadratic;
      n[i] = n_new;
    }
  }
};

}  // namespace

std::unique_ptr<Optimizer> NewFtrlOptimizer(OptimizerProto config) { return std::make_unique<Ftrl>(std::move(config)); }

}  // namespace pstrain
