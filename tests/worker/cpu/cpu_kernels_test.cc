// Gradient checks of every CPU layer kernel against finite differences, and of the convolution's
// forward pass against a direct sum, at every CPU level this machine runs (a level the CPU lacks is
// skipped with a message naming it).
#include <algorithm>
#include <cstring>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/worker/cpu/cpu_levels.h"
#include "tests/worker/cpu/grad_check.h"
#include "worker/cpu/conv2d.h"
#include "worker/cpu/dense.h"
#include "worker/cpu/loss.h"
#include "worker/cpu/pool.h"

namespace pstrain {
namespace {

struct ConvCase {
  int64_t h, w, c, f, k;
  bool same, relu, bias;
  int64_t pool = 0;  // fused max-pool window
};

// pool(act(conv(in) + bias)) by direct loops in double: the forward pass the kernels must match.
std::vector<double> DirectConv(const Conv2DGeometry& g, const std::vector<float>& in, int64_t batch,
                               const std::vector<float>& kernel, const std::vector<float>& bias) {
  const int64_t oh = g.out_height(), ow = g.out_width(), f = g.filters, c = g.in_channels, pad = g.pad();
  std::vector<double> conv(batch * oh * ow * f);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x) {
        for (int64_t o = 0; o < f; ++o) {
          double s = g.bias ? bias[o] : 0.0;
          for (int64_t ky = 0; ky < g.kernel; ++ky) {
            for (int64_t kx = 0; kx < g.kernel; ++kx) {
              const int64_t iy = y + ky - pad, ix = x + kx - pad;
              if (iy < 0 || iy >= g.height || ix < 0 || ix >= g.width) continue;
              for (int64_t ci = 0; ci < c; ++ci) {
                s += double{in[((n * g.height + iy) * g.width + ix) * c + ci]} *
                     kernel[((ky * g.kernel + kx) * c + ci) * f + o];
              }
            }
          }
          conv[((n * oh + y) * ow + x) * f + o] = g.relu && s < 0 ? 0.0 : s;
        }
      }
    }
  }
  if (g.pool == 0) return conv;
  const int64_t p = g.pool, ph = oh / p, pw = ow / p;
  std::vector<double> pooled(batch * ph * pw * f, -1e300);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t y = 0; y < ph * p; ++y) {
      for (int64_t x = 0; x < pw * p; ++x) {
        for (int64_t o = 0; o < f; ++o) {
          double& m = pooled[((n * ph + y / p) * pw + x / p) * f + o];
          m = std::max(m, conv[((n * oh + y) * ow + x) * f + o]);
        }
      }
    }
  }
  return pooled;
}

class Conv2DGradTest : public ::testing::TestWithParam<std::tuple<ConvCase, CpuLevel>> {};

TEST_P(Conv2DGradTest, MatchesDirectSumAndFiniteDifferences) {
  const ConvCase p = std::get<0>(GetParam());
  PSTRAIN_SKIP_UNSUPPORTED_LEVEL(std::get<1>(GetParam()));
  ScopedCpuLevelForTest level(std::get<1>(GetParam()));
  const Conv2DGeometry g{p.h, p.w, p.c, p.f, p.k, p.same, p.relu, p.bias, p.pool};
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
  const std::vector<double> direct = DirectConv(g, in, batch, kernel, bias);
  ASSERT_EQ(direct.size(), out.size());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], direct[i], 1e-4) << "output " << i;
  std::vector<float> dout = weights, din(in.size()), dkernel(kernel.size()), dbias(bias.size());
  conv.Backward(in.data(), out.data(), dout.data(), batch, kernel.data(), din.data(), dkernel.data(), dbias.data());
  ExpectGradientMatches("input", &in, din, loss);
  ExpectGradientMatches("kernel", &kernel, dkernel, loss);
  if (p.bias) ExpectGradientMatches("bias", &bias, dbias, loss);
}

std::string ConvCaseName(const ::testing::TestParamInfo<std::tuple<ConvCase, CpuLevel>>& info) {
  const ConvCase& c = std::get<0>(info.param);
  return absl::StrCat(c.h, "x", c.w, "x", c.c, "_f", c.f, "_k", c.k, c.same ? "_same" : "_valid", c.relu ? "_relu" : "",
                      c.bias ? "" : "_nobias", c.pool > 0 ? absl::StrCat("_pool", c.pool) : "", "_",
                      CpuLevelName(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Conv2DGradTest,
    ::testing::Combine(
        ::testing::Values(ConvCase{6, 5, 1, 3, 3, false, false, true}, ConvCase{6, 6, 2, 4, 3, false, true, true},
                          ConvCase{5, 6, 3, 2, 3, true, false, true}, ConvCase{5, 5, 2, 3, 2, true, true, false},
                          ConvCase{7, 7, 2, 2, 5, true, false, true}, ConvCase{4, 4, 2, 3, 1, false, false, true},
                          ConvCase{6, 6, 1, 8, 3, false, true, true}, ConvCase{5, 5, 1, 16, 3, true, false, true},
                          ConvCase{5, 6, 2, 32, 2, false, true, false}, ConvCase{4, 5, 2, 32, 3, true, true, true},
                          ConvCase{5, 5, 16, 16, 3, false, true, true}, ConvCase{5, 4, 32, 32, 3, true, false, true},
                          ConvCase{6, 5, 4, 48, 3, false, true, true},
                          // a max-pool fused in: the cnn's two layers
                          // (small), a ragged border, `same`, no ReLU
                          ConvCase{8, 8, 1, 32, 3, false, true, true, 2},
                          ConvCase{7, 7, 32, 64, 3, false, true, true, 2},
                          ConvCase{7, 8, 3, 20, 3, false, true, true, 2}, ConvCase{6, 6, 2, 5, 3, true, true, false, 3},
                          ConvCase{6, 7, 3, 17, 2, false, false, true, 2}),
        ::testing::ValuesIn(AllCpuLevels())),
    ConvCaseName);

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

class LayerLevelTest : public ::testing::TestWithParam<CpuLevel> {
 protected:
  void SetUp() override { PSTRAIN_SKIP_UNSUPPORTED_LEVEL(GetParam()); }
};

TEST_P(LayerLevelTest, DenseMatchesFiniteDifferences) {
  ScopedCpuLevelForTest level(GetParam());
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

TEST_P(LayerLevelTest, MaxPoolMatchesFiniteDifferencesWithRaggedBorder) {
  ScopedCpuLevelForTest level(GetParam());
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

INSTANTIATE_TEST_SUITE_P(Levels, LayerLevelTest, ::testing::ValuesIn(AllCpuLevels()), CpuLevelTestName);

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
  EXPECT_NEAR(SoftmaxCrossEntropy(flat.data(), two.data(), 2, classes, 1.f, nullptr, &correct), 2 * std::log(5.0),
              1e-6);
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
