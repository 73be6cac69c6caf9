// Gradient checks of every CPU kernel against finite differences.
#include <cstring>

#include "gtest/gtest.h"
#include "tests/worker/grad_check.h"
#include "worker/cpu/conv2d.h"
#include "worker/cpu/dense.h"
#include "worker/cpu/loss.h"
#include "worker/cpu/pool.h"

namespace pstrain {
namespace {

struct ConvCase {
  int64_t h, w, c, f, k;
  bool same, relu, bias;
};

class Conv2DGradTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2DGradTest, MatchesFiniteDifferences) {
  const ConvCase p = GetParam();
  const Conv2DGeometry g{p.h, p.w, p.c, p.f, p.k, p.same, p.relu, p.bias};
  const int64_t batch = 2;
  std::vector<float> in = RandomVector(batch * g.in_size(), 1);
  std::vector<float> kernel = RandomVector(g.patch() * g.filters, 2, -0.5f, 0.5f);
  std::vector<float> bias = RandomVector(g.filters, 3, -0.2f, 0.2f);
  std::vector<float> weights = RandomVector(batch * g.out_size(), 4);
  Conv2D conv(g);
  std::vector<float> out(weights.size());
  auto loss = [&] {
    conv.Forward(in.data(), batch, kernel.data(), bias.data(), out.data());
    return WeightedSum(out, weights);
  };
  loss();
  std::vector<float> dout = weights, din(in.size()), dkernel(kernel.size()), dbias(bias.size());
  conv.Backward(out.data(), dout.data(), batch, kernel.data(), din.data(), dkernel.data(), dbias.data());
  ExpectGradientMatches("input", &in, din, loss);
  ExpectGradientMatches("kernel", &kernel, dkernel, loss);
  if (p.bias) ExpectGradientMatches("bias", &bias, dbias, loss);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2DGradTest,
                         ::testing::Values(ConvCase{6, 5, 1, 3, 3, false, false, true},
                                           ConvCase{6, 6, 2, 4, 3, false, true, true},
                                           ConvCase{5, 6, 3, 2, 3, true, false, true},
                                           ConvCase{5, 5, 2, 3, 2, true, true, false},
                                           ConvCase{7, 7, 2, 2, 5, true, false, true},
                                           ConvCase{4, 4, 2, 3, 1, false, false, true},
                                           // small patches with 8/16/32 filters take the vectorised path
                                           ConvCase{6, 6, 1, 8, 3, false, true, true},
                                           ConvCase{5, 5, 1, 16, 3, true, false, true},
                                           ConvCase{5, 6, 2, 32, 2, false, true, false},
                                           ConvCase{4, 5, 2, 32, 3, true, true, true},
                                           // 16k filters / patches use the register-blocked GEMMs
                                           ConvCase{5, 5, 16, 16, 3, false, true, true},
                                           ConvCase{5, 4, 32, 32, 3, true, false, true},
                                           ConvCase{6, 5, 4, 48, 3, false, true, true}));

TEST(Conv2DTest, SamePaddingKeepsSizeAndMatchesDirectSum) {
  const Conv2DGeometry g{3, 3, 1, 1, 3, true, false, false};
  std::vector<float> in = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> kernel(9, 1.f);
  std::vector<float> out(9);
  Conv2D conv(g);
  conv.Forward(in.data(), 1, kernel.data(), nullptr, out.data());
  // Centre sees everything; the corner (0,0) sees 1,2,4,5.
  EXPECT_FLOAT_EQ(out[4], 45.f);
  EXPECT_FLOAT_EQ(out[0], 12.f);
  EXPECT_FLOAT_EQ(out[8], 28.f);
}

TEST(DenseGradTest, MatchesFiniteDifferences) {
  for (bool relu : {false, true}) {
    const DenseGeometry g{7, 5, relu, true};
    const int64_t batch = 3;
    std::vector<float> in = RandomVector(batch * g.inputs, 5);
    std::vector<float> kernel = RandomVector(g.inputs * g.units, 6);
    std::vector<float> bias = RandomVector(g.units, 7);
    std::vector<float> weights = RandomVector(batch * g.units, 8);
    Dense dense(g);
    std::vector<float> out(weights.size());
    auto loss = [&] {
      dense.Forward(in.data(), batch, kernel.data(), bias.data(), out.data());
      return WeightedSum(out, weights);
    };
    loss();
    std::vector<float> dout = weights, din(in.size()), dkernel(kernel.size()), dbias(bias.size());
    dense.Backward(in.data(), out.data(), dout.data(), batch, kernel.data(), din.data(), dkernel.data(), dbias.data());
    ExpectGradientMatches("input", &in, din, loss);
    ExpectGradientMatches("kernel", &kernel, dkernel, loss);
    ExpectGradientMatches("bias", &bias, dbias, loss);
  }
}

TEST(MaxPoolGradTest, MatchesFiniteDifferencesWithRaggedBorder) {
  const PoolGeometry g{5, 7, 3, 2};  // the last row and column are dropped, as in Keras
  const int64_t batch = 2;
  EXPECT_EQ(g.out_height(), 2);
  EXPECT_EQ(g.out_width(), 3);
  std::vector<float> in = RandomVector(batch * g.in_size(), 9);
  std::vector<float> weights = RandomVector(batch * g.out_size(), 10);
  MaxPool2D pool(g);
  std::vector<float> out(weights.size());
  auto loss = [&] {
    pool.Forward(in.data(), batch, out.data());
    return WeightedSum(out, weights);
  };
  loss();
  std::vector<float> din(in.size(), 123.f);
  pool.Backward(weights.data(), batch, din.data());
  ExpectGradientMatches("input", &in, din, loss, 1e-3f);
}

TEST(MaxPoolTest, PicksTheMaximum) {
  const PoolGeometry g{2, 2, 1, 2};
  std::vector<float> in = {1, 5, -2, 3}, out(1);
  MaxPool2D pool(g);
  pool.Forward(in.data(), 1, out.data());
  EXPECT_FLOAT_EQ(out[0], 5.f);
}

TEST(SoftmaxCrossEntropyTest, LossAndGradient) {
  const int64_t batch = 4, classes = 5;
  std::vector<float> logits = RandomVector(batch * classes, 11, -3.f, 3.f);
  const std::vector<int32_t> labels = {0, 3, 4, 1};
  const float scale = 0.25f;
  std::vector<float> dlogits(logits.size());
  int64_t correct = 0;
  SoftmaxCrossEntropy(logits.data(), labels.data(), batch, classes, scale, dlogits.data(), &correct);
  auto loss = [&] {
    int64_t c = 0;
    return scale * SoftmaxCrossEntropy(logits.data(), labels.data(), batch, classes, 0.f, nullptr, &c);
  };
  ExpectGradientMatches("logits", &logits, dlogits, loss, 1e-3f);
  // Uniform logits: loss is log(classes) per example.
  std::vector<float> flat(classes * 2, 0.5f);
  const std::vector<int32_t> two = {1, 2};
  EXPECT_NEAR(SoftmaxCrossEntropy(flat.data(), two.data(), 2, classes, 1.f, nullptr, &correct), 2 * std::log(5.0), 1e-6);
}

TEST(SoftmaxCrossEntropyTest, CountsCorrect) {
  const std::vector<float> logits = {0, 5, 1, /**/ 3, 0, 0};
  const std::vector<int32_t> labels = {1, 2};
  int64_t correct = -1;
  SoftmaxCrossEntropy(logits.data(), labels.data(), 2, 3, 1.f, nullptr, &correct);
  EXPECT_EQ(correct, 1);
}

TEST(MeanSquaredErrorTest, LossAndGradient) {
  const int64_t batch = 3, outputs = 2;
  std::vector<float> pred = RandomVector(batch * outputs, 12);
  const std::vector<float> target = RandomVector(batch * outputs, 13);
  std::vector<float> dpred(pred.size());
  MeanSquaredError(pred.data(), target.data(), batch, outputs, 0.5f, dpred.data());
  auto loss = [&] { return 0.5 * MeanSquaredError(pred.data(), target.data(), batch, outputs, 0.f, nullptr); };
  ExpectGradientMatches("predictions", &pred, dpred, loss, 1e-3f);
  const std::vector<float> p1 = {1, 3}, t1 = {0, 0};
  EXPECT_DOUBLE_EQ(MeanSquaredError(p1.data(), t1.data(), 1, 2, 1.f, nullptr), 5.0);  // (1 + 9) / 2
}

}  // namespace
}  // namespace pstrain
