// Keras models on the device executor: the seeds' CNN from real Keras 2 and Keras 3 to_json files
// lowers to the cnn preset's layers, and the device executor (its CPU emulation) computes the CPU
// graph executor's loss and gradients on the same parameters; what the device has no kernel for is
// refused naming the layer.
#include <cmath>
#include <memory>

#include "common/config/job_spec.h"
#include "common/plan/model_variables.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/graph/keras_fixture.h"
#include "tests/worker/cpu/grad_check.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/cuda/device_gradient_computer.h"
#include "worker/cuda/graph_lowering.h"
#include "worker/cuda/host_backend.h"

namespace pstrain {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

ModelSpec KerasModel(const json& doc) {
  auto spec = JobSpecFromJson(json{{"model", {{"keras_model", doc}}}, {"schedule", {{"steps", 1}}}});
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec->model;
}

TEST(GraphLoweringTest, SeedsCnnFromKerasRunsOnTheDeviceExecutorAsOnTheCpu) {
  auto preset = LoadJobSpec("cnn");
  ASSERT_TRUE(preset.ok());
  for (const char* fixture : {"keras2_seeds_cnn.json", "keras3_seeds_cnn.json"}) {
    const ModelSpec model = KerasModel(json::parse(ReadFixture(fixture)));
    auto lowered = LowerGraphForDevice(model);
    ASSERT_TRUE(lowered.ok()) << fixture << ": " << lowered.status();
    ASSERT_EQ(lowered->layers.size(), preset->model.layers.size()) << fixture;
    for (size_t i = 0; i < lowered->layers.size(); ++i) {
      EXPECT_EQ(lowered->layers[i].type, preset->model.layers[i].type) << i;
      EXPECT_EQ(lowered->layers[i].name, preset->model.layers[i].name) << i;
    }
    auto vars = ModelVariables(model);
    auto lowered_vars = ModelVariables(*lowered);
    ASSERT_TRUE(vars.ok() && lowered_vars.ok());
    ASSERT_EQ(vars->size(), lowered_vars->size());
    std::vector<Tensor> params;
    uint32_t seed = 3;
    for (size_t v = 0; v < vars->size(); ++v) {
      EXPECT_EQ((*vars)[v].name, (*lowered_vars)[v].name);
      EXPECT_EQ((*vars)[v].shape, (*lowered_vars)[v].shape);
      params.emplace_back(DType::kFloat32, (*vars)[v].shape);
      std::vector<float> r = RandomVector(params.back().num_elements(), seed++, -0.1f, 0.1f);
      std::copy(r.begin(), r.end(), params.back().flat().begin());
    }
    Batch batch;
    batch.inputs = Tensor(DType::kFloat32, {5, 28, 28, 1});
    std::vector<float> x = RandomVector(batch.inputs.num_elements(), 17, 0.f, 1.f);
    std::copy(x.begin(), x.end(), batch.inputs.flat().begin());
    batch.labels = {3, 1, 4, 1, 5};

    auto cpu = NewCpuGradientComputer(model, 1);
    auto device = DeviceGradientComputer::Create(*lowered, std::make_unique<HostBackend>(), {});
    ASSERT_TRUE(cpu.ok() && device.ok()) << device.status();
    std::vector<Tensor> want, got;
    BatchMetrics want_metrics, got_metrics;
    ASSERT_TRUE((*cpu)->Compute(params, batch, 0.2f, &want, &want_metrics).ok());
    ASSERT_TRUE((*device)->Compute(params, batch, 0.2f, &got, &got_metrics).ok());
    EXPECT_NEAR(got_metrics.loss_sum, want_metrics.loss_sum, 1e-4 * want_metrics.loss_sum) << fixture;
    EXPECT_EQ(got_metrics.correct, want_metrics.correct);
    ASSERT_EQ(got.size(), want.size());
    for (size_t v = 0; v < want.size(); ++v) {
      double max_abs = 1e-3;
      for (float g : want[v].flat()) max_abs = std::max(max_abs, std::fabs(static_cast<double>(g)));
      for (int64_t e = 0; e < want[v].num_elements(); ++e) {
        ASSERT_NEAR(got[v].flat()[e], want[v].flat()[e], 1e-4 * max_abs) << (*vars)[v].name << " element " << e;
      }
    }
  }
}

TEST(GraphLoweringTest, WhatTheDeviceCannotRunIsRefusedNamingTheLayer) {
  json gelu = json::parse(ReadFixture("keras3_seeds_cnn.json"));
  for (json& layer : gelu["config"]["layers"]) {
    if (layer["class_name"] == "Dense") {
      layer["config"]["activation"] = "gelu";
      break;
    }
  }
  struct Case {
    json doc;
    const char* expected;
  };
  const Case cases[] = {
      {json::parse(ReadFixture("keras3_residual_mlp.json")), "(LayerNormalization) has no device kernel"},
      {gelu, "with activation gelu has no device kernel"},
      {json::parse(ReadFixture("keras3_regression_mlp.json")), "with activation tanh"},
  };
  for (const Case& c : cases) {
    auto lowered = LowerGraphForDevice(KerasModel(c.doc));
    ASSERT_FALSE(lowered.ok()) << c.expected;
    EXPECT_THAT(std::string(lowered.status().message()), HasSubstr(c.expected));
    EXPECT_THAT(std::string(lowered.status().message()), HasSubstr("--device=cpu"));
  }
}

}  // namespace
}  // namespace pstrain
