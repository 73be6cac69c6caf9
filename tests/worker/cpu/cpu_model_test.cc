// Model-level checks of the CPU GradientComputer: whole-model gradients against finite differences,
// thread-count independence, the loss-scaling contract and input validation.
#include "common/config/job_spec.h"
#include "common/config/json_util.h"
#include "common/plan/model_variables.h"
#include "gtest/gtest.h"
#include "tests/worker/cpu/grad_check.h"
#include "worker/cpu/cpu_gradient_computer.h"

namespace pstrain {
namespace {

ModelSpec SpecFromJson(const std::string& model_json) {
  auto doc = ParseJson(absl::StrCat(R"({"model": )", model_json, R"(, "schedule": {"steps": 1}})"), "test");
  EXPECT_TRUE(doc.ok());
  auto job = JobSpecFromJson(*doc);
  EXPECT_TRUE(job.ok()) << job.status();
  return job->model;
}

const char kSmallCnn[] = R"({"input_shape": [6, 6, 2], "layers": [
    {"type": "conv2d", "filters": 3, "kernel_size": 3, "padding": "same"},
    {"type": "relu"},
    {"type": "max_pool2d"},
    {"type": "conv2d", "filters": 4, "kernel_size": 2, "activation": "relu"},
    {"type": "flatten"},
    {"type": "dense", "units": 5, "activation": "relu"},
    {"type": "dense", "units": 3}]})";

std::vector<Tensor> RandomParams(const ModelSpec& model, uint32_t seed) {
  std::vector<Tensor> params;
  const std::vector<VariableSpec> vars = *ModelVariables(model);
  for (const VariableSpec& v : vars) {
    params.emplace_back(DType::kFloat32, v.shape);
    std::vector<float> r = RandomVector(params.back().num_elements(), seed++, -0.6f, 0.6f);
    std::copy(r.begin(), r.end(), params.back().flat().begin());
  }
  return params;
}

Batch RandomBatch(const ModelSpec& model, int64_t n, int64_t classes, uint32_t seed) {
  Batch b;
  std::vector<int64_t> shape = {n};
  shape.insert(shape.end(), model.input_shape.begin(), model.input_shape.end());
  b.inputs = Tensor(DType::kFloat32, shape);
  std::vector<float> r = RandomVector(b.inputs.num_elements(), seed, 0.f, 1.f);
  std::copy(r.begin(), r.end(), b.inputs.flat().begin());
  for (int64_t i = 0; i < n; ++i) b.labels.push_back(static_cast<int32_t>((i * 7 + seed) % classes));
  if (model.loss == "mse") b.targets = RandomVector(n * classes, seed + 1);
  return b;
}

void CheckModelGradients(const ModelSpec& model, const Batch& batch, int threads) {
  auto gc = NewCpuGradientComputer(model, threads);
  ASSERT_TRUE(gc.ok()) << gc.status();
  std::vector<Tensor> params = RandomParams(model, 20);
  const float scale = 1.0f / static_cast<float>(batch.size());
  std::vector<Tensor> grads;
  BatchMetrics m;
  ASSERT_TRUE((*gc)->Compute(params, batch, scale, &grads, &m).ok());
  EXPECT_EQ(m.examples, batch.size());
  auto vars = *ModelVariables(model);
  for (size_t v = 0; v < params.size(); ++v) {
    std::vector<float> values(params[v].flat().begin(), params[v].flat().end());
    std::vector<float> analytic(grads[v].flat().begin(), grads[v].flat().end());
    auto loss = [&] {
      std::copy(values.begin(), values.end(), params[v].flat().begin());
      BatchMetrics e;
      EXPECT_TRUE((*gc)->Evaluate(params, batch, &e).ok());
      return e.loss_sum * scale;
    };
    ExpectGradientMatches(vars[v].name, &values, analytic, loss, 3e-4f);  // small eps: fewer ReLU/max kinks crossed
    std::copy(values.begin(), values.end(), params[v].flat().begin());
  }
}

TEST(CpuModelTest, CnnGradientsMatchFiniteDifferences) {
  const ModelSpec model = SpecFromJson(kSmallCnn);
  CheckModelGradients(model, RandomBatch(model, 4, 3, 1), 1);
  CheckModelGradients(model, RandomBatch(model, 5, 3, 2), 2);
}

TEST(CpuModelTest, MseGradientsMatchFiniteDifferences) {
  const ModelSpec model = SpecFromJson(R"({"input_shape": [4], "loss": "mse", "layers": [
      {"type": "dense", "units": 6, "activation": "relu"}, {"type": "dense", "units": 2}]})");
  CheckModelGradients(model, RandomBatch(model, 6, 2, 3), 1);
}

void ExpectTensorsNear(const std::vector<Tensor>& a, const std::vector<Tensor>& b, float tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t v = 0; v < a.size(); ++v) {
    for (int64_t i = 0; i < a[v].num_elements(); ++i) {
      ASSERT_NEAR(a[v].flat()[i], b[v].flat()[i], tol) << "variable " << v << " element " << i;
    }
  }
}

TEST(CpuModelTest, ThreadCountDoesNotChangeResults) {
  const ModelSpec model = SpecFromJson(kSmallCnn);
  const std::vector<Tensor> params = RandomParams(model, 30);
  const Batch batch = RandomBatch(model, 7, 3, 4);
  std::vector<std::vector<Tensor>> grads(3);
  std::vector<BatchMetrics> metrics(3);
  for (int t = 1; t <= 3; ++t) {
    auto gc = NewCpuGradientComputer(model, t);
    ASSERT_TRUE(gc.ok());
    ASSERT_TRUE((*gc)->Compute(params, batch, 0.1f, &grads[t - 1], &metrics[t - 1]).ok());
  }
  for (int t = 1; t < 3; ++t) {
    ExpectTensorsNear(grads[0], grads[t], 1e-5f);
    EXPECT_NEAR(metrics[0].loss_sum, metrics[t].loss_sum, 1e-4);
    EXPECT_EQ(metrics[0].correct, metrics[t].correct);
    EXPECT_EQ(metrics[t].examples, 7);
  }
}

TEST(CpuModelTest, TwoHalfBatchesSumToOneFullBatch) {
  // The loss-scaling contract: scale 1/(2B) on two batches of B, summed, equals one batch of 2B.
  const ModelSpec model = SpecFromJson(kSmallCnn);
  const std::vector<Tensor> params = RandomParams(model, 40);
  const Batch full = RandomBatch(model, 8, 3, 5);
  Batch half[2];
  for (int h = 0; h < 2; ++h) {
    half[h].inputs = Tensor(DType::kFloat32, {4, 6, 6, 2});
    const int64_t per = 6 * 6 * 2;
    std::copy(full.inputs.flat().begin() + h * 4 * per, full.inputs.flat().begin() + (h + 1) * 4 * per,
              half[h].inputs.flat().begin());
    half[h].labels.assign(full.labels.begin() + h * 4, full.labels.begin() + (h + 1) * 4);
  }
  auto gc = *NewCpuGradientComputer(model, 1);
  std::vector<Tensor> g_full, g0, g1;
  BatchMetrics m_full, m_half;
  ASSERT_TRUE(gc->Compute(params, full, 1.f / 8, &g_full, &m_full).ok());
  ASSERT_TRUE(gc->Compute(params, half[0], 1.f / 8, &g0, &m_half).ok());
  ASSERT_TRUE(gc->Compute(params, half[1], 1.f / 8, &g1, &m_half).ok());
  for (size_t v = 0; v < g0.size(); ++v) {
    for (int64_t i = 0; i < g0[v].num_elements(); ++i) g0[v].flat()[i] += g1[v].flat()[i];
  }
  ExpectTensorsNear(g_full, g0, 1e-5f);
  EXPECT_NEAR(m_full.loss_sum, m_half.loss_sum, 1e-4);
  EXPECT_EQ(m_half.examples, 8);
}

TEST(CpuModelTest, RejectsWrongParametersAndLabels) {
  const ModelSpec model = SpecFromJson(kSmallCnn);
  auto gc = *NewCpuGradientComputer(model, 2);
  std::vector<Tensor> params = RandomParams(model, 50);
  Batch batch = RandomBatch(model, 2, 3, 6);
  std::vector<Tensor> grads;
  BatchMetrics m;
  std::vector<Tensor> fewer(params.begin(), params.end() - 1);
  EXPECT_EQ(gc->Compute(fewer, batch, 1.f, &grads, &m).code(), absl::StatusCode::kInvalidArgument);
  std::vector<Tensor> wrong = params;
  wrong[0] = Tensor(DType::kFloat32, {3, 3, 2, 7});
  const absl::Status s = gc->Compute(wrong, batch, 1.f, &grads, &m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("conv2d/kernel"), std::string::npos) << s;
  batch.labels[1] = 3;
  EXPECT_EQ(gc->Compute(params, batch, 1.f, &grads, &m).code(), absl::StatusCode::kInvalidArgument);
  batch.labels.pop_back();
  EXPECT_EQ(gc->Evaluate(params, batch, &m).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CpuModelTest, CnnPresetBuildsWithKerasShapes) {
  auto job = LoadJobSpec("cnn");
  ASSERT_TRUE(job.ok());
  auto gc = NewCpuGradientComputer(job->model, 2);
  ASSERT_TRUE(gc.ok()) << gc.status();
  std::vector<Tensor> params = RandomParams(job->model, 60);
  EXPECT_EQ(params[4].shape(), (std::vector<int64_t>{1600, 64}));
  Batch batch = RandomBatch(job->model, 3, 10, 7);
  std::vector<Tensor> grads;
  BatchMetrics m;
  ASSERT_TRUE((*gc)->Compute(params, batch, 1.f / 3, &grads, &m).ok());
  EXPECT_EQ(grads.size(), params.size());
  EXPECT_GT(m.loss_sum, 0.0);
}

}  // namespace
}  // namespace pstrain
