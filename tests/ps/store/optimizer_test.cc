#include "ps/store/optimizer.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace pstrain {
namespace {

// Three steps on two elements with fixed gradients; the expected values are computed below in
// double precision straight from the Keras update rules, not through the code under test.
const std::vector<std::vector<float>> kGrads = {{0.5f, -1.0f}, {0.25f, 2.0f}, {-0.75f, 0.1f}};
const std::vector<float> kStart = {1.0f, -2.0f};

std::vector<float> RunSteps(const OptimizerProto& proto, int steps = 3) {
  auto opt = Optimizer::Create(proto);
  EXPECT_TRUE(opt.ok()) << opt.status();
  std::vector<float> w = kStart;
  std::vector<std::vector<float>> slots((*opt)->SlotNames().size(), std::vector<float>(2));
  for (size_t i = 0; i < slots.size(); ++i) slots[i].assign(2, (*opt)->SlotInitialValue(static_cast<int>(i)));
  for (int t = 0; t < steps; ++t) {
    std::vector<absl::Span<float>> spans;
    for (auto& s : slots) spans.push_back(absl::MakeSpan(s));
    (*opt)->Apply(kGrads[t], absl::MakeSpan(w), spans, t);
  }
  return w;
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << i;
}

OptimizerProto Make(const std::string& type, double lr) {
  OptimizerProto p;
  p.set_type(type);
  p.mutable_learning_rate()->set_initial(lr);
  return p;
}

TEST(Optimizer, PlainSgd) {
  std::vector<double> w = {1.0, -2.0};
  for (auto& g : kGrads)
    for (int i = 0; i < 2; ++i) w[i] -= 0.1 * g[i];
  ExpectNear(RunSteps(Make("sgd", 0.1)), w);
}

TEST(Optimizer, SgdMomentumAndNesterov) {
  for (bool nesterov : {false, true}) {
    OptimizerProto p = Make("sgd", 0.1);
    p.set_momentum(0.9);
    p.set_nesterov(nesterov);
    std::vector<double> w = {1.0, -2.0}, v = {0, 0};
    for (auto& g : kGrads) {
      for (int i = 0; i < 2; ++i) {
        v[i] = 0.9 * v[i] - 0.1 * g[i];
        w[i] += nesterov ? 0.9 * v[i] - 0.1 * g[i] : v[i];
      }
    }
    ExpectNear(RunSteps(p), w);
  }
}

TEST(Optimizer, AdagradKerasDefaults) {
  std::vector<double> w = {1.0, -2.0}, a = {0.1, 0.1};
  for (auto& g : kGrads) {
    for (int i = 0; i < 2; ++i) {
      a[i] += double(g[i]) * g[i];
      w[i] -= 0.01 * g[i] / std::sqrt(a[i] + 1e-7);
    }
  }
  ExpectNear(RunSteps(Make("adagrad", 0.01)), w);
}

TEST(Optimizer, AdamKerasDefaults) {
  std::vector<double> w = {1.0, -2.0}, m = {0, 0}, v = {0, 0};
  for (int t = 1; t <= 3; ++t) {
    for (int i = 0; i < 2; ++i) {
      const double g = kGrads[t - 1][i];
      m[i] = 0.9 * m[i] + 0.1 * g;
      v[i] = 0.999 * v[i] + 0.001 * g * g;
      const double lr_t = 0.001 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
      w[i] -= lr_t * m[i] / (std::sqrt(v[i]) + 1e-7);
    }
  }
  ExpectNear(RunSteps(Make("adam", 0)), w);  // 0 = Keras default learning rate 0.001
}

TEST(Optimizer, RmsPropPlainCenteredMomentum) {
  for (bool centered : {false, true}) {
    for (double mu : {0.0, 0.5}) {
      OptimizerProto p = Make("rmsprop", 0.01);
      p.set_centered(centered);
      p.set_momentum(mu);
      std::vector<double> w = {1.0, -2.0}, vel = {0, 0}, avg = {0, 0}, mom = {0, 0};
      for (auto& gf : kGrads) {
        for (int i = 0; i < 2; ++i) {
          const double g = gf[i];
          vel[i] = 0.9 * vel[i] + 0.1 * g * g;
          double den = vel[i] + 1e-7;
          if (centered) {
            avg[i] = 0.9 * avg[i] + 0.1 * g;
            den = vel[i] - avg[i] * avg[i] + 1e-7;
          }
          const double inc = 0.01 * g / std::sqrt(den);
          if (mu > 0) {
            mom[i] = mu * mom[i] + inc;
            w[i] -= mom[i];
          } else {
            w[i] -= inc;
          }
        }
      }
      ExpectNear(RunSteps(p), w);
    }
  }
}

// Keras's Ftrl over three dense steps, from its update_step written out in double precision.
TEST(Optimizer, FtrlKerasFormulaAsADenseOptimizer) {
  struct Case {
    double power, l1, l2, shrinkage, beta;
  };
  for (const Case& c : {Case{-0.5, 0, 0, 0, 0}, Case{-0.6, 0.05, 0.01, 0.02, 0.3}, Case{0, 0.5, 0, 0, 0}}) {
    OptimizerProto p = Make("ftrl", 0.1);
    p.set_learning_rate_power(c.power);
    p.set_l1(c.l1);
    p.set_l2(c.l2);
    p.set_l2_shrinkage(c.shrinkage);
    p.set_beta(c.beta);
    std::vector<double> w = {1.0, -2.0}, n = {0.1, 0.1}, z = {0, 0};
    for (auto& gf : kGrads) {
      for (int i = 0; i < 2; ++i) {
        const double g = gf[i], lr = 0.1;
        const double shrunk = g + 2 * c.shrinkage * w[i];
        const double n_new = n[i] + g * g;
        z[i] += shrunk - (std::pow(n_new, -c.power) - std::pow(n[i], -c.power)) / lr * w[i];
        const double quadratic = std::pow(n_new, -c.power) / lr + 2 * (c.l2 + c.beta / (2 * lr));
        w[i] = (std::max(-c.l1, std::min(c.l1, z[i])) - z[i]) / quadratic;
        n[i] = n_new;
      }
    }
    ExpectNear(RunSteps(p), w);
  }
}

TEST(Optimizer, FtrlDefaultsAndChecks) {
  OptimizerSpec spec;
  spec.type = "ftrl";
  auto opt = Optimizer::Create(OptimizerProtoFromSpec(spec));
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ((*opt)->SlotNames(), (std::vector<std::string>{"accumulator", "linear"}));
  EXPECT_DOUBLE_EQ((*opt)->config().learning_rate_power(), -0.5);
  EXPECT_DOUBLE_EQ((*opt)->config().initial_accumulator_value(), 0.1);
  EXPECT_DOUBLE_EQ((*opt)->config().learning_rate().initial(), 0.001);
  OptimizerProto p = Make("ftrl", 0.1);
  p.set_learning_rate_power(0.5);
  EXPECT_NE(Optimizer::Create(p).status().message().find("learning_rate_power"), std::string::npos);
  p = Make("ftrl", 0.1);
  p.set_l1(-1);
  EXPECT_NE(Optimizer::Create(p).status().message().find("l1"), std::string::npos);
}

TEST(Optimizer, LazyAdamIsAdamOnDenseGradients) {
  OptimizerProto lazy = Make("lazy_adam", 0.01), adam = Make("adam", 0.01);
  EXPECT_EQ(RunSteps(lazy), RunSteps(adam));
}

TEST(Optimizer, LearningRateSchedules) {
  OptimizerProto p = Make("sgd", 1.0);
  p.mutable_learning_rate()->set_schedule("exponential_decay");
  p.mutable_learning_rate()->set_decay_steps(10);
  p.mutable_learning_rate()->set_decay_rate(0.5);
  auto opt = Optimizer::Create(p);
  ASSERT_TRUE(opt.ok());
  EXPECT_DOUBLE_EQ((*opt)->LearningRate(0), 1.0);
  EXPECT_NEAR((*opt)->LearningRate(5), std::pow(0.5, 0.5), 1e-12);
  p.mutable_learning_rate()->set_staircase(true);
  opt = Optimizer::Create(p);
  EXPECT_DOUBLE_EQ((*opt)->LearningRate(5), 1.0);
  EXPECT_DOUBLE_EQ((*opt)->LearningRate(25), 0.25);

  OptimizerProto pc = Make("sgd", 1.0);
  pc.mutable_learning_rate()->set_schedule("piecewise_constant");
  pc.mutable_learning_rate()->add_boundaries(2);
  pc.mutable_learning_rate()->add_boundaries(4);
  for (double v : {0.1, 0.01, 0.001}) pc.mutable_learning_rate()->add_values(v);
  opt = Optimizer::Create(pc);
  ASSERT_TRUE(opt.ok());
  EXPECT_DOUBLE_EQ((*opt)->LearningRate(2), 0.1);  // Keras: step <= boundary keeps the value
  EXPECT_DOUBLE_EQ((*opt)->LearningRate(3), 0.01);
  EXPECT_DOUBLE_EQ((*opt)->LearningRate(5), 0.001);
  // The schedule drives the steps: sgd with lr 0.1, 0.1, 0.1 for steps 0..2.
  std::vector<double> w = {1.0, -2.0};
  for (auto& g : kGrads)
    for (int i = 0; i < 2; ++i) w[i] -= 0.1 * g[i];
  ExpectNear(RunSteps(pc), w);
}

TEST(Optimizer, BadConfigsAreNamed) {
  OptimizerProto p = Make("adamw", 0.1);
  auto opt = Optimizer::Create(p);
  EXPECT_EQ(opt.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(opt.status().message().find("adamw"), std::string::npos);
  p = Make("sgd", 0.1);
  p.mutable_learning_rate()->set_schedule("piecewise_constant");
  p.mutable_learning_rate()->add_boundaries(3);
  opt = Optimizer::Create(p);
  EXPECT_EQ(opt.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(opt.status().message().find("learning_rate.values"), std::string::npos);
}

TEST(Optimizer, FromJobSpecIsExplicit) {
  OptimizerSpec spec;
  spec.type = "adagrad";
  OptimizerProto p = OptimizerProtoFromSpec(spec);
  EXPECT_EQ(p.type(), "adagrad");
  EXPECT_DOUBLE_EQ(p.initial_accumulator_value(), 0.1);
  EXPECT_DOUBLE_EQ(p.epsilon(), 1e-7);
  EXPECT_DOUBLE_EQ(p.learning_rate().initial(), 0.001);
}

}  // namespace
}  // namespace pstrain
