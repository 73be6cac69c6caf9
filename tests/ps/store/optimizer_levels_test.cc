// The dense optimizer loops at every CPU level this machine runs (a level the CPU lacks is skipped
// with a message naming it): the vectorised loop over a whole shard gives exactly the bits of the
// element-by-element formula (which optimizer_test.cc checks against Keras's rules), so every
// level, and every CPU a ps may run on, computes the same values.
#include <cstring>
#include <random>
#include <vector>

#include "common/platform/cpu_level.h"
#include "gtest/gtest.h"
#include "ps/store/optimizer.h"

namespace pstrain {
namespace {

OptimizerProto Config(const std::string& type, double momentum, bool nesterov, bool centered) {
  OptimizerProto p;
  p.set_type(type);
  p.mutable_learning_rate()->set_initial(0.05);
  p.set_momentum(momentum);
  p.set_nesterov(nesterov);
  p.set_centered(centered);
  return p;
}

// Runs 3 steps of `opt` on `n` elements, `width` elements per Apply call; returns values then slots.
std::vector<float> ThreeSteps(const Optimizer& opt, int64_t n, int64_t width) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> w(n), grads(3 * n);
  for (float& x : w) x = u(rng);
  for (float& x : grads) x = u(rng);
  std::vector<std::vector<float>> slots;
  for (size_t s = 0; s < opt.SlotNames().size(); ++s) slots.emplace_back(n, opt.SlotInitialValue(static_cast<int>(s)));
  for (int step = 0; step < 3; ++step) {
    for (int64_t at = 0; at < n; at += width) {
      const int64_t len = std::min(width, n - at);
      std::vector<absl::Span<float>> spans;
      for (auto& s : slots) spans.push_back(absl::MakeSpan(s.data() + at, len));
      opt.Apply(absl::MakeConstSpan(grads.data() + step * n + at, len), absl::MakeSpan(w.data() + at, len), spans,
                step);
    }
  }
  for (auto& s : slots) w.insert(w.end(), s.begin(), s.end());
  return w;
}

class OptimizerLevelTest : public ::testing::TestWithParam<CpuLevel> {};

TEST_P(OptimizerLevelTest, VectorLoopsGiveTheBitsOfTheScalarFormula) {
  const CpuLevel level = GetParam();
  if (level > DetectCpuLevel()) {
    GTEST_SKIP() << "CPU level " << CpuLevelName(level) << " is not supported by this CPU (it has "
                 << CpuLevelName(DetectCpuLevel()) << ")";
  }
  ScopedCpuLevelForTest scoped(level);
  const std::vector<OptimizerProto> configs = {Config("sgd", 0, false, false),     Config("sgd", 0.9, false, false),
                                               Config("sgd", 0.9, true, false),    Config("adagrad", 0, false, false),
                                               Config("adam", 0, false, false),    Config("rmsprop", 0, false, false),
                                               Config("rmsprop", 0.5, false, true)};
  for (const OptimizerProto& p : configs) {
    SCOPED_TRACE(p.ShortDebugString());
    auto opt = Optimizer::Create(p);
    ASSERT_TRUE(opt.ok()) << opt.status();
    const int64_t n = 67;  // whole vectors at every width, and a tail
    const std::vector<float> whole = ThreeSteps(**opt, n, n), one_by_one = ThreeSteps(**opt, n, 1);
    ASSERT_EQ(whole.size(), one_by_one.size());
    EXPECT_EQ(std::memcmp(whole.data(), one_by_one.data(), sizeof(float) * whole.size()), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, OptimizerLevelTest, ::testing::ValuesIn(LevelsUpTo(CpuLevel::kAvx512)),
                         [](const ::testing::TestParamInfo<CpuLevel>& info) { return CpuLevelName(info.param); });

}  // namespace
}  // namespace pstrain
