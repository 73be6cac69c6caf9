#include "ps/store/optimizer.h"

#include <cmath>

#include "common/plan/optimizer_defaults.h"
#include "ps/store/ftrl_optimizer.h"
#include "ps/store/optimizer_kernels.h"

namespace pstrain {
namespace {

class Sgd : public Optimizer {
 public:
  using Optimizer::Optimizer;
  void Apply(absl::Span<const float> g, absl::Span<float> w, absl::Span<const absl::Span<float>> slots,
             int64_t step) const override {
    const float lr = static_cast<float>(LearningRate(step));
    const int64_t n = static_cast<int64_t>(w.size());
    if (config().momentum() == 0) return ActiveOptimizerKernels().sgd(w.data(), g.data(), lr, n);
    ActiveOptimizerKernels().sgd_momentum(w.data(), slots[0].data(), g.data(), lr,
                                          static_cast<float>(config().momentum()), config().nesterov(), n);
  }
};

class Adagrad : public Optimizer {
 public:
  using Optimizer::Optimizer;
  float SlotInitialValue(int) const override { return static_cast<float>(config().initial_accumulator_value()); }
  void Apply(absl::Span<const float> g, absl::Span<float> w, absl::Span<const absl::Span<float>> slots,
             int64_t step) const override {
    ActiveOptimizerKernels().adagrad(w.data(), slots[0].data(), g.data(), static_cast<float>(LearningRate(step)),
                                     static_cast<float>(config().epsilon()), static_cast<int64_t>(w.size()));
  }
};

class Adam : public Optimizer {
 public:
  using Optimizer::Optimizer;
  void Apply(absl::Span<const float> g, absl::Span<float> w, absl::Span<const absl::Span<float>> slots,
             int64_t step) const override {
    const double t = static_cast<double>(step + 1);
    const double b1 = config().beta_1(), b2 = config().beta_2();
    const float alpha =
        static_cast<float>(LearningRate(step) * std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t)));
    const float one_minus_b1 = static_cast<float>(1.0 - b1), one_minus_b2 = static_cast<float>(1.0 - b2);
    ActiveOptimizerKernels().adam(w.data(), slots[0].data(), slots[1].data(), g.data(), alpha, one_minus_b1,
                                  one_minus_b2, static_cast<float>(config().epsilon()), static_cast<int64_t>(w.size()));
  }
};

class RmsProp : public Optimizer {
 public:
  using Optimizer::Optimizer;
  void Apply(absl::Span<const float> g, absl::Span<float> w, absl::Span<const absl::Span<float>> slots,
             int64_t step) const override {
    const float mu = static_cast<float>(config().momentum());
    float* mom = mu > 0 ? slots[1].data() : nullptr;
    float* avg = config().centered() ? slots[mu > 0 ? 2 : 1].data() : nullptr;
    ActiveOptimizerKernels().rmsprop(w.data(), slots[0].data(), mom, avg, g.data(),
                                     static_cast<float>(LearningRate(step)), static_cast<float>(config().rho()),
                                     static_cast<float>(config().epsilon()), mu, static_cast<int64_t>(w.size()));
  }
};

class AdditiveUpdate : public Optimizer {
 public:
  using Optimizer::Optimizer;
  std::vector<std::string> SlotNames() const override { return {}; }
  void Apply(absl::Span<const float> g, absl::Span<float> w, absl::Span<const absl::Span<float>>,
             int64_t) const override {
    for (size_t i = 0; i < w.size(); ++i) w[i] += g[i];
  }
};

}  // namespace

std::shared_ptr<const Optimizer> Optimizer::Additive() {
  static const std::shared_ptr<const Optimizer> additive = [] {
    OptimizerProto p;
    p.set_type("additive");
    return std::shared_ptr<const Optimizer>(new AdditiveUpdate(std::move(p)));
  }();
  return additive;
}

absl::StatusOr<std::unique_ptr<Optimizer>> Optimizer::Create(const OptimizerProto& proto) {
  OptimizerProto p = proto;
  absl::Status s = FillOptimizerDefaults(&p);
  if (!s.ok()) return s;
  if (p.type() == "sgd") return std::unique_ptr<Optimizer>(new Sgd(std::move(p)));
  if (p.type() == "adagrad") return std::unique_ptr<Optimizer>(new Adagrad(std::move(p)));
  // LazyAdam's formula is Adam's; it differs only in which rows of a table it updates (sparse_apply.h).
  if (p.type() == "adam" || p.type() == "lazy_adam") return std::unique_ptr<Optimizer>(new Adam(std::move(p)));
  if (p.type() == "ftrl") return NewFtrlOptimizer(std::move(p));
  return std::unique_ptr<Optimizer>(new RmsProp(std::move(p)));
}

double Optimizer::LearningRate(int64_t step) const {
  const LearningRateProto& lr = config_.learning_rate();
  if (lr.schedule() == "exponential_decay") {
    double p = static_cast<double>(step) / static_cast<double>(lr.decay_steps());
    if (lr.staircase()) p = std::floor(p);
    return lr.initial() * std::pow(lr.decay_rate(), p);
  }
  if (lr.schedule() == "piecewise_constant") {
    for (int i = 0; i < lr.boundaries_size(); ++i) {
      if (step <= lr.boundaries(i)) return lr.values(i);
    }
    return lr.values(lr.values_size() - 1);
  }
  return lr.initial();
}

}  // namespace pstrain
