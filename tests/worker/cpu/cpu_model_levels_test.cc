// The CPU GradientComputer at every CPU level this machine runs (a level the CPU lacks is skipped
// with a message naming it): whole models against the naive double-precision reference, and the
// same step repeated bit for bit for a given level and thread count.
#include <cmath>
#include <cstring>
#include <random>

#include "common/platform/cpu_level.h"
#include "gtest/gtest.h"
#include "tests/worker/cpu/cpu_levels.h"
#include "tests/worker/cuda/naive_model_reference.h"
#include "worker/cpu/cpu_gradient_computer.h"

namespace pstrain {
namespace {

// The cnn preset's layers, then `same` padding with a ReLU layer and a ragged fused pool, then an
// MLP with MSE: every fused and unfused path of the CPU model.
const char* const kModels[] = {
    R"({"input_shape": [28, 28, 1], "layers": [
        {"type": "conv2d", "filters": 32, "kernel_size": 3, "activation": "relu"}, {"type": "max_pool2d"},
        {"type": "conv2d", "filters": 64, "kernel_size": 3, "activation": "relu"}, {"type": "max_pool2d"},
        {"type": "flatten"}, {"type": "dense", "units": 64, "activation": "relu"}, {"type": "dense", "units": 10}]})",
    R"({"input_shape": [9, 9, 3], "layers": [
        {"type": "conv2d", "filters": 5, "kernel_size": 3, "padding": "same"}, {"type": "relu"},
        {"type": "max_pool2d"},
        {"type": "conv2d", "filters": 20, "kernel_size": 2, "activation": "relu"}, {"type": "max_pool2d"},
        {"type": "flatten"}, {"type": "dense", "units": 7}]})",
    R"({"input_shape": [13], "loss": "mse", "layers": [
        {"type": "dense", "units": 33, "activation": "relu"}, {"type": "dense", "units": 3}]})",
};

class CpuModelLevelTest : public ::testing::TestWithParam<CpuLevel> {
 protected:
  void SetUp() override { PSTRAIN_SKIP_UNSUPPORTED_LEVEL(GetParam()); }
};

TEST_P(CpuModelLevelTest, MatchesNaiveReference) {
  ScopedCpuLevelForTest level(GetParam());
  for (const char* json : kModels) {
    const ModelSpec model = ModelFromJson(json);
    SCOPED_TRACE(json);
    std::mt19937 rng(7);
    const std::vector<Tensor> params = RandomParams(model, &rng, 0.3f);
    const Batch batch = RandomBatch(model, 5, &rng);
    auto gc = NewCpuGradientComputer(model, 2);
    ASSERT_TRUE(gc.ok()) << gc.status();
    std::vector<Tensor> grads;
    BatchMetrics m;
    ASSERT_TRUE((*gc)->Compute(params, batch, 0.2f, &grads, &m).ok());
    const ReferenceResult want = NaiveReference(model, params, batch, 0.2);
    EXPECT_NEAR(m.loss_sum, want.loss_sum, 1e-4 * std::fabs(want.loss_sum) + 1e-5);
    EXPECT_EQ(m.correct, want.correct);
    ASSERT_EQ(grads.size(), want.param_grads.size());
    for (size_t v = 0; v < grads.size(); ++v) {
      double largest = 0;
      for (double g : want.param_grads[v]) largest = std::max(largest, std::fabs(g));
      int bad = 0;
      for (int64_t i = 0; i < grads[v].num_elements(); ++i) {
        const double got = grads[v].flat()[i], expect = want.param_grads[v][i];
        if (std::fabs(got - expect) <= 1e-4 * largest + 1e-6) continue;
        if (++bad <= 5) ADD_FAILURE() << "variable " << v << " [" << i << "]: got " << got << ", want " << expect;
      }
      EXPECT_EQ(bad, 0) << "variable " << v;
    }
  }
}

TEST_P(CpuModelLevelTest, RepeatsBitForBit) {
  ScopedCpuLevelForTest level(GetParam());
  const ModelSpec model = ModelFromJson(kModels[0]);
  std::mt19937 rng(11);
  const std::vector<Tensor> params = RandomParams(model, &rng, 0.3f);
  const Batch batch = RandomBatch(model, 9, &rng);
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(testing::Message() << threads << " threads");
    // Twice on one computer (buffers reused), once on a fresh one.
    std::vector<std::vector<Tensor>> grads(3);
    std::vector<BatchMetrics> metrics(3);
    auto first = NewCpuGradientComputer(model, threads), second = NewCpuGradientComputer(model, threads);
    ASSERT_TRUE(first.ok() && second.ok());
    ASSERT_TRUE((*first)->Compute(params, batch, 0.1f, &grads[0], &metrics[0]).ok());
    ASSERT_TRUE((*first)->Compute(params, batch, 0.1f, &grads[1], &metrics[1]).ok());
    ASSERT_TRUE((*second)->Compute(params, batch, 0.1f, &grads[2], &metrics[2]).ok());
    for (int run = 1; run < 3; ++run) {
      EXPECT_EQ(metrics[run].loss_sum, metrics[0].loss_sum);
      for (size_t v = 0; v < grads[0].size(); ++v) {
        EXPECT_EQ(std::memcmp(grads[run][v].flat().data(), grads[0][v].flat().data(),
                              sizeof(float) * grads[0][v].num_elements()),
                  0)
            << "run " << run << " variable " << v << " differs";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, CpuModelLevelTest, ::testing::ValuesIn(AllCpuLevels()), CpuLevelTestName);

}  // namespace
}  // namespace pstrain
