// The CPU GradientComputer of a Keras model: the seeds' CNN read from real Keras to_json files gives
// the cnn preset's losses, gradients and metrics on the same parameters (the two executors share no
// code), whatever the thread count; probabilities and logits give the same loss; bad batches are
// refused. The presets written as Keras models (layer_model_keras.h) compute the presets' steps.
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/config/job_spec.h"
#include "common/graph/layer_model_keras.h"
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

// The layer-list presets written as Keras models (layer_model_keras.h), in both flavors, compute
// the presets' steps: gradients, loss, accuracy and evaluation, on 1 and 2 threads.
TEST(GraphGradientComputerTest, PresetsAsKerasModelsComputeThePresetsSteps) {
  for (const char* name : {"linear", "mlp", "cnn"}) {
    auto preset = LoadJobSpec(name);
    ASSERT_TRUE(preset.ok());
    const std::vector<Tensor> params = RandomParams(preset->model, 21, 0.1f);
    Batch batch;
    if (std::string(name) == "linear") {
      batch.inputs = Tensor(DType::kFloat32, {7, 2});
      std::vector<float> r = RandomVector(14, 8, -1.f, 1.f);
      std::copy(r.begin(), r.end(), batch.inputs.flat().begin());
      for (int i = 0; i < 7; ++i) batch.targets.push_back(0.5f * static_cast<float>(i) - 1.f);
    } else {
      batch = RandomImages(7, 4);
    }
    auto reference = NewCpuGradientComputer(preset->model, 1);
    ASSERT_TRUE(reference.ok()) << reference.status();
    std::vector<Tensor> want;
    BatchMetrics want_metrics;
    ASSERT_TRUE((*reference)->Compute(params, batch, 1.0f / 7, &want, &want_metrics).ok()) << name;
    for (KerasJsonFlavor flavor : {KerasJsonFlavor::kKeras3, KerasJsonFlavor::kKeras2}) {
      auto model = LayerModelAsGraph(preset->model, flavor);
      ASSERT_TRUE(model.ok()) << model.status();
      for (int threads : {1, 2}) {
        SCOPED_TRACE(absl::StrCat(name, flavor == KerasJsonFlavor::kKeras3 ? " keras3" : " keras2", " threads ", threads));
        auto graph = NewCpuGradientComputer(*model, threads);
        ASSERT_TRUE(graph.ok()) << graph.status();
        std::vector<Tensor> got;
        BatchMetrics metrics;
        ASSERT_TRUE((*graph)->Compute(params, batch, 1.0f / 7, &got, &metrics).ok());
        ExpectNear(got, want, 1e-4);
        EXPECT_NEAR(metrics.loss_sum, want_metrics.loss_sum, 1e-5 * std::max(1.0, want_metrics.loss_sum));
        EXPECT_EQ(metrics.correct, want_metrics.correct);
        BatchMetrics eval;
        ASSERT_TRUE((*graph)->Evaluate(params, batch, &eval).ok());
        EXPECT_NEAR(eval.loss_sum, want_metrics.loss_sum, 1e-5 * std::max(1.0, want_metrics.loss_sum));
      }
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

// Input [2] -> BatchNormalization "bn" (momentum 0.8) -> Dense "y" [1], as Keras 3's to_json writes it.
json BatchNormModel() {
  auto tensor = [](const std::string& from, int width) {
    return json{{"class_name", "__keras_tensor__"},
                {"config", {{"shape", {nullptr, width}}, {"dtype", "float32"}, {"keras_history", {from, 0, 0}}}}};
  };
  json input = {{"module", "keras.layers"}, {"class_name", "InputLayer"}, {"name", "x"}, {"inbound_nodes", json::array()},
                {"config", {{"batch_shape", {nullptr, 2}}, {"dtype", "float32"}, {"name", "x"}}}};
  json bn = {{"module", "keras.layers"}, {"class_name", "BatchNormalization"}, {"name", "bn"},
             {"config", {{"name", "bn"}, {"axis", -1}, {"momentum", 0.8}, {"epsilon", 0.001}, {"center", true},
                         {"scale", true}}},
             {"inbound_nodes", {{{"args", {tensor("x", 2)}}, {"kwargs", json::object()}}}}};
  json dense = {{"module", "keras.layers"}, {"class_name", "Dense"}, {"name", "y"},
                {"config", {{"name", "y"}, {"units", 1}, {"activation", "linear"}, {"use_bias", true}}},
                {"inbound_nodes", {{{"args", {tensor("bn", 2)}}, {"kwargs", json::object()}}}}};
  return {{"module", "keras.src.models.functional"}, {"class_name", "Functional"},
          {"config", {{"name", "bn_model"}, {"layers", {input, bn, dense}}, {"input_layers", {"x", 0, 0}},
                      {"output_layers", {"y", 0, 0}}}}};
}

// The moving statistics' "gradients" are Keras's update (batch statistic - moving) * (1 - momentum),
// times the batch's share of the global batch (examples * loss_scale); with several threads the
// chunks' parts add up to the batch's mean.
TEST(GraphGradientComputerTest, MovingStatisticsGetKerasUpdateScaledByTheBatchShare) {
  json job = {{"model", {{"keras_model", BatchNormModel()}, {"loss", "mse"}}},
              {"data", {{"dataset", "synthetic_linear"}, {"num_examples", 8}}},
              {"schedule", {{"steps", 1}}}};
  auto spec = JobSpecFromJson(job);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::vector<VariableSpec> variables = *ModelVariables(spec->model);
  std::map<std::string, int> index;
  for (size_t i = 0; i < variables.size(); ++i) index[variables[i].name] = static_cast<int>(i);
  ASSERT_EQ(index.count("bn/moving_mean"), 1u);
  ASSERT_EQ(index.count("bn/moving_variance"), 1u);
  const int mean = index["bn/moving_mean"], var = index["bn/moving_variance"];
  EXPECT_FALSE(variables[mean].trainable);
  std::vector<Tensor> params;
  for (const VariableSpec& v : variables) params.emplace_back(DType::kFloat32, v.shape);
  auto set = [&](const std::string& name, std::vector<float> values) {
    std::copy(values.begin(), values.end(), params[index[name]].flat().begin());
  };
  set("bn/gamma", {1, 2});
  set("bn/beta", {0, 1});
  set("bn/moving_mean", {1, -1});
  set("bn/moving_variance", {2, 0.5f});
  set("y/kernel", {0.5f, -1});
  Batch batch;
  batch.inputs = Tensor(DType::kFloat32, {4, 2});
  const std::vector<float> x = {1, 4, 3, 8, 5, 0, -1, 4};  // column means 2, 4; variances 5, 8
  std::copy(x.begin(), x.end(), batch.inputs.flat().begin());
  batch.targets = {1, 0, -1, 2};
  const float loss_scale = 1.0f / 8;  // a worker with half of a global batch of 8
  const float share = 4 * loss_scale;
  auto computer = NewCpuGradientComputer(spec->model, 1);
  ASSERT_TRUE(computer.ok()) << computer.status();
  std::vector<Tensor> grads;
  BatchMetrics metrics;
  ASSERT_TRUE((*computer)->Compute(params, batch, loss_scale, &grads, &metrics).ok());
  EXPECT_NEAR(grads[mean].flat()[0], (2 - 1) * 0.2f * share, 1e-6);
  EXPECT_NEAR(grads[mean].flat()[1], (4 + 1) * 0.2f * share, 1e-6);
  EXPECT_NEAR(grads[var].flat()[0], (5 - 2) * 0.2f * share, 1e-6);
  EXPECT_NEAR(grads[var].flat()[1], (8 - 0.5f) * 0.2f * share, 1e-6);
  EXPECT_NE(grads[index["bn/gamma"]].flat()[0], 0.f) << "the trainable variables still get gradients";
  // Two threads: chunks {rows 0, 1} and {rows 2, 3}, each its own statistics; the means add up to
  // the batch's, the variances to the mean of the chunks' (1 and 4; 9 and 4).
  auto threaded = NewCpuGradientComputer(spec->model, 2);
  ASSERT_TRUE(threaded.ok());
  std::vector<Tensor> split;
  ASSERT_TRUE((*threaded)->Compute(params, batch, loss_scale, &split, &metrics).ok());
  EXPECT_NEAR(split[mean].flat()[0], grads[mean].flat()[0], 1e-6);
  EXPECT_NEAR(split[mean].flat()[1], grads[mean].flat()[1], 1e-6);
  EXPECT_NEAR(split[var].flat()[0], ((1 + 9) / 2.0f - 2) * 0.2f * share, 1e-6);
  EXPECT_NEAR(split[var].flat()[1], ((4 + 4) / 2.0f - 0.5f) * 0.2f * share, 1e-6);
  // Evaluation leaves nothing to update and uses the moving statistics.
  BatchMetrics eval;
  ASSERT_TRUE((*computer)->Evaluate(params, batch, &eval).ok());
  EXPECT_GT(eval.loss_sum, 0);
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
