// The CPU GradientComputer of a Keras model: the seeds' CNN read from real Keras to_json files gives
// the cnn preset's losses, gradients and metrics on the same parameters (the two executors share no
// code), whatever the thread count; probabilities and logits give the same loss; bad batches are
// refused.
#include <cmath>

#include "common/config/job_spec.h"
#include "common/plan/model_variables.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/graph/keras_fixture.h"
#include "tests/worker/cpu/grad_check.h"
#include "worker/cpu/cpu_gradient_computer.h"

namespace pstrain {
namespace {

using nlohmann::json;

ModelSpec KerasModel(const std::string& fixture, const std::string& loss = "sparse_categorical_crossentropy") {
  json job = {{"model", {{"keras_model", json::parse(ReadFixture(fixture))}, {"loss", loss}}},
              {"schedule", {{"steps", 1}}}};
  auto spec = JobSpecFromJson(job);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec->model;
}

std::vector<Tensor> RandomParams(const ModelSpec& model, uint32_t seed, float scale) {
  std::vector<Tensor> params;
  const std::vector<VariableSpec> variables = *ModelVariables(model);
  for (const VariableSpec& v : variables) {
    params.emplace_back(DType::kFloat32, v.shape);
    std::vector<float> r = RandomVector(params.back().num_elements(), seed++, -scale, scale);
    std::copy(r.begin(), r.end(), params.back().flat().begin());
  }
  return params;
}

Batch RandomImages(int64_t n, uint32_t seed) {
  Batch b;
  b.inputs = Tensor(DType::kFloat32, {n, 28, 28, 1});
  std::vector<float> r = RandomVector(b.inputs.num_elements(), seed, 0.f, 1.f);
  std::copy(r.begin(), r.end(), b.inputs.flat().begin());
  for (int64_t i = 0; i < n; ++i) b.labels.push_back(static_cast<int32_t>((i * 7 + seed) % 10));
  return b;
}

void ExpectNear(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tolerance) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    double max_abs = 0;
    for (float x : b[i].flat()) max_abs = std::max(max_abs, std::fabs(static_cast<double>(x)));
    for (int64_t e = 0; e < a[i].num_elements(); ++e) {
      ASSERT_NEAR(a[i].flat()[e], b[i].flat()[e], tolerance * std::max(1.0, max_abs)) << "variable " << i << " element " << e;
    }
  }
}

TEST(GraphGradientComputerTest, SeedsCnnFromKerasEqualsTheCnnPreset) {
  auto preset = LoadJobSpec("cnn");
  ASSERT_TRUE(preset.ok());
  const std::vector<Tensor> params = RandomParams(preset->model, 11, 0.1f);
  const Batch batch = RandomImages(6, 3);
  auto reference = NewCpuGradientComputer(preset->model, 1);
  ASSERT_TRUE(reference.ok()) << reference.status();
  std::vector<Tensor> want;
  BatchMetrics want_metrics;
  ASSERT_TRUE((*reference)->Compute(params, batch, 1.0f / 6, &want, &want_metrics).ok());
  for (const char* fixture : {"keras2_seeds_cnn.json", "keras3_seeds_cnn.json"}) {
    const ModelSpec model = KerasModel(fixture);
    for (int threads : {1, 2}) {
      auto graph = NewCpuGradientComputer(model, threads);
      ASSERT_TRUE(graph.ok()) << graph.status();
      std::vector<Tensor> got;
      BatchMetrics metrics;
      ASSERT_TRUE((*graph)->Compute(params, batch, 1.0f / 6, &got, &metrics).ok()) << fixture;
      ExpectNear(got, want, 1e-4);
      EXPECT_NEAR(metrics.loss_sum, want_metrics.loss_sum, 1e-4 * want_metrics.loss_sum) << fixture;
      EXPECT_EQ(metrics.correct, want_metrics.correct);
      EXPECT_EQ(metrics.examples, 6);
      BatchMetrics eval;
      ASSERT_TRUE((*graph)->Evaluate(params, batch, &eval).ok());
      EXPECT_NEAR(eval.loss_sum, want_metrics.loss_sum, 1e-4 * want_metrics.loss_sum);
      EXPECT_EQ(eval.correct, want_metrics.correct);
    }
  }
}

// Dropout's masks are reproducible: two fresh computers draw the same ones on their first step, so
// their gradients differ only by the loss scale; a second step draws new masks.
TEST(GraphGradientComputerTest, LossScaleMultipliesTheGradientsAndDropoutIsReproducible) {
  const ModelSpec model = KerasModel("keras3_residual_mlp.json");
  const std::vector<Tensor> params = RandomParams(model, 5, 0.1f);
  const Batch batch = RandomImages(5, 9);
  auto a = NewCpuGradientComputer(model, 1);
  auto b = NewCpuGradientComputer(model, 1);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status();
  std::vector<Tensor> scaled, unit, next;
  BatchMetrics m1, m2, m3;
  ASSERT_TRUE((*a)->Compute(params, batch, 0.25f, &scaled, &m1).ok());
  ASSERT_TRUE((*b)->Compute(params, batch, 1.0f, &unit, &m2).ok());
  EXPECT_DOUBLE_EQ(m1.loss_sum, m2.loss_sum);
  for (Tensor& t : unit) {
    for (float& x : t.flat()) x *= 0.25f;
  }
  ExpectNear(scaled, unit, 1e-6);
  ASSERT_TRUE((*a)->Compute(params, batch, 0.25f, &next, &m3).ok());
  EXPECT_NE(m3.loss_sum, m1.loss_sum) << "the second step must draw other Dropout masks";
  BatchMetrics eval1, eval2;
  ASSERT_TRUE((*a)->Evaluate(params, batch, &eval1).ok());
  ASSERT_TRUE((*b)->Evaluate(params, batch, &eval2).ok());
  EXPECT_DOUBLE_EQ(eval1.loss_sum, eval2.loss_sum) << "evaluation does not drop";
}

TEST(GraphGradientComputerTest, BadBatchesAreRefusedNamingWhatIsWrong) {
  const ModelSpec model = KerasModel("keras3_seeds_cnn.json");
  auto graph = NewCpuGradientComputer(model, 1);
  ASSERT_TRUE(graph.ok());
  std::vector<Tensor> params = RandomParams(model, 1, 0.1f);
  std::vector<Tensor> grads;
  BatchMetrics metrics;
  Batch few_labels = RandomImages(3, 1);
  few_labels.labels.pop_back();
  EXPECT_THAT(std::string((*graph)->Compute(params, few_labels, 1, &grads, &metrics).message()),
              ::testing::HasSubstr("labels"));
  Batch bad_label = RandomImages(3, 1);
  bad_label.labels[1] = 10;
  EXPECT_THAT(std::string((*graph)->Compute(params, bad_label, 1, &grads, &metrics).message()),
              ::testing::HasSubstr("class id"));
  params.pop_back();
  EXPECT_THAT(std::string((*graph)->Compute(params, RandomImages(2, 1), 1, &grads, &metrics).message()),
              ::testing::HasSubstr("variables"));
}

}  // namespace
}  // namespace pstrain
