#include "ps/optimizer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "ps/ftrl_optimizer.h"
#include "ps/optimizer_kernels.h"

namespace pstrain {
namespace {

class Sgd : public Optimizer {
 public:
  using Optimizer::Optimizer;
  std::vector<std::string> SlotNames() const override {
    if (config().momentum() == 0) return {};
    return {"momentum"};
  }
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
  std::vector<std::string> SlotNames() const override { return {"accumulator"}; }
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
  std::vector<std::string> SlotNames() const override { return {"m", "v"}; }
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
  std::vector<std::string> SlotNames() const override {
    std::vector<std::string> names = {"velocity"};
    if (config().momentum() > 0) names.push_back("momentum");
    if (config().centered()) names.push_back("average_gradient");
    return names;
  }
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

absl::Status Invalid(const std::string& field, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat("optimizer.", field, " ", problem));
}

// Keras Ftrl's defaults and argument checks.
absl::Status FillFtrlDefaultsAndValidate(OptimizerProto* p) {
  if (!p->has_learning_rate_power()) p->set_learning_rate_power(-0.5);
  if (p->learning_rate_power() > 0) return Invalid("learning_rate_power", "must be <= 0");
  if (p->l1() < 0) return Invalid("l1", "must be >= 0");
  if (p->l2() < 0) return Invalid("l2", "must be >= 0");
  if (p->l2_shrinkage() < 0) return Invalid("l2_shrinkage", "must be >= 0");
  if (p->beta() < 0) return Invalid("beta", "must be >= 0");
  return absl::OkStatus();
}

absl::Status FillDefaultsAndValidate(OptimizerProto* p) {
  if (p->type().empty()) p->set_type("adam");
  const std::string& type = p->type();
  if (type != "sgd" && type != "adagrad" && type != "adam" && type != "rmsprop" && type != "ftrl" &&
      type != "lazy_adam") {
    return Invalid("type", absl::StrCat("\"", type, "\" is unknown (sgd, adagrad, adam, rmsprop, ftrl, lazy_adam)"));
  }
  LearningRateProto* lr = p->mutable_learning_rate();
  if (lr->initial() == 0) lr->set_initial(type == "sgd" ? 0.01 : 0.001);
  if (lr->schedule().empty()) lr->set_schedule("constant");
  if (p->beta_1() == 0) p->set_beta_1(0.9);
  if (p->beta_2() == 0) p->set_beta_2(0.999);
  if (p->epsilon() == 0) p->set_epsilon(1e-7);
  if (p->rho() == 0) p->set_rho(0.9);
  if (p->initial_accumulator_value() == 0) p->set_initial_accumulator_value(0.1);
  if (lr->initial() < 0) return Invalid("learning_rate", "must be positive");
  if (p->epsilon() < 0) return Invalid("epsilon", "must be positive");
  if (p->momentum() < 0) return Invalid("momentum", "must be >= 0");
  RETURN_IF_ERROR(FillFtrlDefaultsAndValidate(p));
  if (lr->schedule() == "exponential_decay") {
    if (lr->decay_steps() <= 0) return Invalid("learning_rate.decay_steps", "must be positive for exponential_decay");
  } else if (lr->schedule() == "piecewise_constant") {
    if (lr->values_size() != lr->boundaries_size() + 1) {
      return Invalid("learning_rate.values", absl::StrCat("needs boundaries+1 = ", lr->boundaries_size() + 1,
                                                          " entries, got ", lr->values_size()));
    }
  } else if (lr->schedule() != "constant") {
    return Invalid(
        "learning_rate.schedule",
        absl::StrCat("\"", lr->schedule(), "\" is unknown (constant, exponential_decay, piecewise_constant)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Optimizer>> Optimizer::Create(const OptimizerProto& proto) {
  OptimizerProto p = proto;
  absl::Status s = FillDefaultsAndValidate(&p);
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

absl::StatusOr<int> OptimizerSlotCount(const OptimizerSpec& spec) {
  absl::StatusOr<std::unique_ptr<Optimizer>> optimizer = Optimizer::Create(OptimizerProtoFromSpec(spec));
  if (!optimizer.ok()) return optimizer.status();
  return static_cast<int>((*optimizer)->SlotNames().size());
}

}  // namespace pstrain
