// Exact AUC and log loss against direct, independent computations (pairwise counting, the
// textbook formulas) on random sets with many ties, and their degenerate cases.
#include "common/metrics/binary_metrics.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace pstrain {
namespace {

// Fraction of (positive, negative) pairs the positive wins, ties counting one half: O(n^2).
double PairwiseAuc(const std::vector<float>& labels, const std::vector<float>& scores) {
  double wins = 0.0, pairs = 0.0;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] != 1.0f) continue;
    for (size_t j = 0; j < labels.size(); ++j) {
      if (labels[j] != 0.0f) continue;
      pairs += 1.0;
      if (scores[i] > scores[j]) wins += 1.0;
      if (scores[i] == scores[j]) wins += 0.5;
    }
  }
  return wins / pairs;
}

TEST(ExactAucTest, MatchesPairwiseCountWithManyTies) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 30; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 400);
    const int levels = 1 + static_cast<int>(rng() % 12);  // few distinct scores: many ties
    std::vector<float> labels(n), scores(n);
    for (int i = 0; i < n; ++i) {
      labels[i] = static_cast<float>(rng() % 3 == 0);
      scores[i] = static_cast<float>(rng() % levels) * 0.25f - 1.0f + 0.3f * labels[i] * static_cast<float>(rng() % 2);
    }
    labels[0] = 1.0f;
    if (n > 1) labels[1] = 0.0f;
    if (n == 1) continue;
    EXPECT_NEAR(ExactAuc(labels, scores), PairwiseAuc(labels, scores), 1e-12) << "trial " << trial << " n " << n;
  }
}

TEST(ExactAucTest, KnownValues) {
  const std::vector<float> labels = {0, 0, 1, 1};
  EXPECT_DOUBLE_EQ(ExactAuc(labels, std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f}), 1.0);
  EXPECT_DOUBLE_EQ(ExactAuc(labels, std::vector<float>{0.4f, 0.3f, 0.2f, 0.1f}), 0.0);
  EXPECT_DOUBLE_EQ(ExactAuc(labels, std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f}), 0.5);
  // sklearn's roc_auc_score([0,0,1,1], [0.1,0.4,0.35,0.8]) = 0.75.
  EXPECT_DOUBLE_EQ(ExactAuc(labels, std::vector<double>{0.1, 0.4, 0.35, 0.8}), 0.75);
}

TEST(ExactAucTest, InvariantUnderMonotoneTransform) {
  std::mt19937 rng(3);
  std::normal_distribution<double> normal;
  std::vector<float> labels(1000);
  std::vector<double> logits(1000), probabilities(1000);
  for (int i = 0; i < 1000; ++i) {
    labels[i] = static_cast<float>(rng() % 2);
    logits[i] = normal(rng) + labels[i];
    probabilities[i] = 1.0 / (1.0 + std::exp(-logits[i]));
  }
  EXPECT_DOUBLE_EQ(ExactAuc(labels, logits), ExactAuc(labels, probabilities));
}

TEST(ExactAucTest, UndefinedCasesAreNaN) {
  EXPECT_TRUE(std::isnan(ExactAuc({}, absl::Span<const float>())));
  EXPECT_TRUE(std::isnan(ExactAuc(std::vector<float>{1, 1, 1}, std::vector<float>{0.1f, 0.2f, 0.3f})));
  EXPECT_TRUE(std::isnan(ExactAuc(std::vector<float>{0, 0}, std::vector<float>{0.1f, 0.2f})));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(ExactAuc(std::vector<float>{0, 1, 0}, std::vector<float>{0.1f, nan, 0.3f})));
}

double DirectLogLoss(const std::vector<float>& labels, const std::vector<double>& logits) {
  double sum = 0.0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const double p = 1.0 / (1.0 + std::exp(-logits[i]));
    sum += labels[i] == 1.0f ? -std::log(p) : -std::log(1.0 - p);
  }
  return sum / static_cast<double>(labels.size());
}

TEST(LogLossTest, FromLogitsMatchesDirectFormula) {
  std::mt19937 rng(11);
  std::normal_distribution<double> normal(0.0, 3.0);
  std::vector<float> labels(500);
  std::vector<double> logits(500);
  std::vector<float> logits32(500);
  for (int i = 0; i < 500; ++i) {
    labels[i] = static_cast<float>(rng() % 2);
    logits32[i] = static_cast<float>(normal(rng));
    logits[i] = logits32[i];
  }
  EXPECT_NEAR(LogLossFromLogits(labels, logits), DirectLogLoss(labels, logits), 1e-12);
  EXPECT_NEAR(LogLossFromLogits(labels, logits32), DirectLogLoss(labels, logits), 1e-12);
}

TEST(LogLossTest, FromLogitsIsStableForHugeLogits) {
  // A confident right answer costs ~0; a confident wrong one costs |z|, with no overflow.
  const std::vector<float> labels = {1, 0, 1, 0};
  EXPECT_NEAR(LogLossFromLogits(std::vector<float>{1}, std::vector<double>{800.0}), 0.0, 1e-300);
  EXPECT_DOUBLE_EQ(LogLossFromLogits(std::vector<float>{1}, std::vector<double>{-800.0}), 800.0);
  EXPECT_DOUBLE_EQ(LogLossFromLogits(labels, std::vector<double>{-1000, 1000, -1000, 1000}), 1000.0);
  EXPECT_DOUBLE_EQ(LogLossFromLogits(std::vector<float>{0}, std::vector<double>{0.0}), std::log(2.0));
}

TEST(LogLossTest, FromProbabilitiesClampsAsKeras) {
  const std::vector<float> labels = {1, 0};
  const double e = kLogLossEpsilon;
  // p = 0.8 and 0.3: -(log(0.8 + e) + log(1 - 0.3 + e)) / 2.
  EXPECT_NEAR(LogLossFromProbabilities(labels, std::vector<double>{0.8, 0.3}),
              -(std::log(0.8 + e) + std::log(0.7 + e)) / 2.0, 1e-12);
  // p = 0 for a positive: clipped to e, so -log(2e) (about 15.4), finite.
  const double worst = LogLossFromProbabilities(std::vector<float>{1}, std::vector<double>{0.0});
  EXPECT_NEAR(worst, -std::log(2 * e), 1e-9);
  EXPECT_TRUE(std::isfinite(LogLossFromProbabilities(std::vector<float>{0}, std::vector<float>{1.0f})));
  EXPECT_TRUE(std::isnan(LogLossFromProbabilities({}, absl::Span<const double>())));
  EXPECT_TRUE(std::isnan(LogLossFromLogits({}, absl::Span<const float>())));
}

TEST(LogLossTest, ProbabilitiesAgreeWithLogitsAwayFromTheClip) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  std::vector<float> labels(300);
  std::vector<double> logits(300), probabilities(300);
  for (int i = 0; i < 300; ++i) {
    labels[i] = static_cast<float>(rng() % 2);
    logits[i] = u(rng);
    probabilities[i] = 1.0 / (1.0 + std::exp(-logits[i]));
  }
  EXPECT_NEAR(LogLossFromProbabilities(labels, probabilities), LogLossFromLogits(labels, logits), 1e-5);
}

}  // namespace
}  // namespace pstrain
