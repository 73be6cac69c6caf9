// Keras's losses: values on hand-checked cases and gradients against finite differences.
#include "worker/graph/losses.h"

#include <cmath>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/worker/graph/graph_test_util.h"

namespace pstrain {
namespace {

double Loss(const std::string& name, bool logits, const Array<double>& out, const Array<double>& labels) {
  Array<double> d;
  absl::StatusOr<double> v = ComputeLoss(*ParseLoss(name, logits), out, labels, &d);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : NAN;
}

TEST(GraphLossTest, ValuesMatchKerasFormulas) {
  // Probabilities [0.25, 0.75] and [0.5, 0.5], classes 1 and 0: mean of -log 0.75 and -log 0.5.
  const Array<double> probs({2, 2}, {0.25, 0.75, 0.5, 0.5});
  EXPECT_NEAR(Loss("sparse_categorical_crossentropy", false, probs, Array<double>({2}, {1, 0})),
              (-std::log(0.75) - std::log(0.5)) / 2, 1e-12);
  EXPECT_NEAR(Loss("categorical_crossentropy", false, probs, Array<double>({2, 2}, {0, 1, 1, 0})),
              (-std::log(0.75) - std::log(0.5)) / 2, 1e-12);
  // Logits [0, ln 3]: softmax [0.25, 0.75].
  EXPECT_NEAR(Loss("sparse_categorical_crossentropy", true, Array<double>({1, 2}, {0, std::log(3.0)}),
                   Array<double>({1}, {1})), -std::log(0.75), 1e-12);
  // Binary: logit 0 -> log 2 whatever the label; probability 0.8 with label 1 -> -log 0.8.
  EXPECT_NEAR(Loss("binary_crossentropy", true, Array<double>({2, 1}, {0, 0}), Array<double>({2, 1}, {1, 0})),
              std::log(2.0), 1e-12);
  EXPECT_NEAR(Loss("binary_crossentropy", false, Array<double>({1, 1}, {0.8}), Array<double>({1, 1}, {1})),
              -std::log(0.8), 1e-12);
  // Clipped like Keras: a probability of 1 for label 0 costs -log(1e-7), not infinity.
  EXPECT_NEAR(Loss("binary_crossentropy", false, Array<double>({1, 1}, {1.0}), Array<double>({1, 1}, {0})),
              -std::log(1e-7), 1e-6);
  EXPECT_NEAR(Loss("mse", false, Array<double>({2, 2}, {1, 2, 3, 4}), Array<double>({2, 2}, {1, 0, 3, 2})),
              (0 + 4 + 0 + 4) / 4.0, 1e-12);
}

TEST(GraphLossTest, GradientsMatchFiniteDifferences) {
  std::mt19937 rng(3);
  struct Case {
    std::string name;
    bool logits;
  };
  for (const Case& c : std::vector<Case>{{"sparse_categorical_crossentropy", true},
                                         {"sparse_categorical_crossentropy", false},
                                         {"categorical_crossentropy", true},
                                         {"categorical_crossentropy", false},
                                         {"binary_crossentropy", true},
                                         {"binary_crossentropy", false},
                                         {"mean_squared_error", false}}) {
    SCOPED_TRACE(c.name + (c.logits ? " from logits" : ""));
    // Probabilities in (0.05, 0.95) so no value sits at the clip.
    Array<double> out = RandomArray<double>({3, 4}, &rng, c.logits ? -2.0 : 0.05, c.logits ? 2.0 : 0.95);
    Array<double> labels = RandomArray<double>({3, 4}, &rng, 0.0, 1.0);
    if (c.name == "sparse_categorical_crossentropy") labels = Array<double>({3}, {0, 3, 1});
    if (c.name == "categorical_crossentropy") {
      for (int r = 0; r < 3; ++r) {
        double s = 0;
        for (int k = 0; k < 4; ++k) s += labels.data[r * 4 + k];
        for (int k = 0; k < 4; ++k) labels.data[r * 4 + k] /= s;
      }
    }
    Array<double> d;
    ASSERT_TRUE(ComputeLoss(*ParseLoss(c.name, c.logits), out, labels, &d).ok());
    ExpectGradient("output", &out.data, d.data, [&]() { return Loss(c.name, c.logits, out, labels); });
  }
}

TEST(GraphLossTest, BadLabelsAndNamesAreErrors) {
  Array<double> d;
  const LossSpec sparse = *ParseLoss("sparse_categorical_crossentropy", true);
  absl::StatusOr<double> v = ComputeLoss(sparse, Array<double>({2, 3}), Array<double>({2}, {0, 3}), &d);
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(std::string(v.status().message()), ::testing::HasSubstr("label 3 is not a class id in [0, 3)"));
  v = ComputeLoss(sparse, Array<double>({2, 3}), Array<double>({3}, {0, 1, 2}), &d);
  EXPECT_FALSE(v.ok());
  v = ComputeLoss(*ParseLoss("mse", false), Array<double>({2, 3}), Array<double>({2, 2}), &d);
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(std::string(v.status().message()), ::testing::HasSubstr("do not match"));
  absl::StatusOr<LossSpec> bad = ParseLoss("hinge", false);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("binary_crossentropy"));
}

}  // namespace
}  // namespace pstrain
