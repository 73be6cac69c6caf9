// Every layer of the model library, forward and backward, through the device executor against the
// naive double-precision reference (and whole models against the CPU GradientComputer), on two
// backends:
//   emulation: the CPU emulation backend (same kernel bodies, naive GEMM) - runs everywhere;
//   cuda:      the GPU (cuBLAS + pstrain kernels) - skipped with a message when no GPU is visible.
// Tolerance: |got - want| <= 1e-4 + 1e-3 * |want| per element (float32 vs double, sums of a few
// hundred terms; cuBLAS runs in plain FP32, no TF32); loss sums within 1e-4 relative.
#include <memory>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "tests/worker/cuda/naive_model_reference.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/cuda/cuda_gradient_computer.h"
#include "worker/cuda/device_gradient_computer.h"
#include "worker/cuda/host_backend.h"
#ifdef PSTRAIN_HAVE_CUDA
#include "worker/cuda/cuda_backend.h"
#endif

namespace pstrain {
namespace {

constexpr double kAtol = 1e-4, kRtol = 1e-3;

void ExpectClose(const std::vector<float>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    if (std::abs(got[i] - want[i]) > kAtol + kRtol * std::abs(want[i])) {
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
      ++bad;
    }
  }
}

std::vector<float> Flat(const Tensor& t) { return {t.flat().begin(), t.flat().end()}; }

class DeviceExecutorTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Creates the computer for this backend, or skips the test when it cannot exist here.
  std::unique_ptr<DeviceGradientComputer> Make(const ModelSpec& model) {
    std::unique_ptr<DeviceBackend> backend;
    if (GetParam() == "emulation") {
      backend = std::make_unique<HostBackend>();
    } else {
#ifdef PSTRAIN_HAVE_CUDA
      if (CudaDeviceCount() == 0) {
        skip_ = "no CUDA device: this machine has no visible GPU; the GPU comparison runs only on a GPU machine";
        return nullptr;
      }
      auto b = NewCudaBackend(0);
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok()) return nullptr;
      backend = std::move(*b);
#else
      skip_ = "no CUDA device: this pstrain was built without CUDA (nvcc not found or PSTRAIN_CUDA=OFF)";
      return nullptr;
#endif
    }
    auto c = DeviceGradientComputer::Create(model, std::move(backend), {/*input_gradient=*/true});
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Runs one Compute and compares everything the executor exposes with the reference.
  void CheckModel(const std::string& model_json, int batch_size, int levels = 0) {
    const ModelSpec model = ModelFromJson(model_json);
    ASSERT_FALSE(model.layers.empty()) << "bad test model " << model_json;
    auto computer = Make(model);
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_NE(computer, nullptr);
    CheckCompute(computer.get(), model, batch_size, levels);
  }

  void CheckCompute(DeviceGradientComputer* computer, const ModelSpec& model, int batch_size, int levels = 0) {
    std::mt19937 rng(1234 + batch_size);
    const std::vector<Tensor> params = RandomParams(model, &rng);
    const Batch batch = RandomBatch(model, batch_size, &rng, levels);
    const float scale = 1.0f / 7;
    std::vector<Tensor> grads;
    BatchMetrics m;
    const absl::Status s = computer->Compute(params, batch, scale, &grads, &m);
    ASSERT_TRUE(s.ok()) << s;
    const ReferenceResult want = NaiveReference(model, params, batch, scale);
    for (size_t i = 0; i < model.layers.size(); ++i) {
      std::vector<float> act;
      ASSERT_TRUE(computer->ReadActivation(static_cast<int>(i), &act).ok());
      ExpectClose(act, want.activations[i], "forward " + model.layers[i].name);
    }
    std::vector<float> dx;
    ASSERT_TRUE(computer->ReadInputGradient(&dx).ok());
    ExpectClose(dx, want.input_grad, "input gradient");
    ASSERT_EQ(grads.size(), want.param_grads.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      EXPECT_EQ(grads[i].shape(), params[i].shape());
      ExpectClose(Flat(grads[i]), want.param_grads[i], "grad " + std::to_string(i));
    }
    EXPECT_EQ(m.examples, batch_size);
    EXPECT_NEAR(m.loss_sum, want.loss_sum, 1e-4 * std::abs(want.loss_sum) + 1e-5);
    EXPECT_EQ(m.correct, want.correct);
    BatchMetrics e;
    ASSERT_TRUE(computer->Evaluate(params, batch, &e).ok());
    EXPECT_EQ(e.examples, m.examples);
    EXPECT_NEAR(e.loss_sum, m.loss_sum, 1e-6 * std::abs(m.loss_sum) + 1e-6);
    EXPECT_EQ(e.correct, m.correct);
  }

  std::string skip_;
};

TEST_P(DeviceExecutorTest, DenseLinearMse) {
  CheckModel(R"({"input_shape": [5], "loss": "mse", "layers": [{"type": "dense", "units": 4}]})", 3);
}

TEST_P(DeviceExecutorTest, DenseReluSoftmaxCrossEntropy) {
  CheckModel(R"({"input_shape": [6], "layers": [{"type": "dense", "units": 5, "activation": "relu"},
                                                 {"type": "dense", "units": 3}]})",
             9);
}

TEST_P(DeviceExecutorTest, DenseWithoutBias) {
  CheckModel(R"({"input_shape": [4], "layers": [{"type": "dense", "units": 3, "use_bias": false}]})", 2);
}

TEST_P(DeviceExecutorTest, ReluLayer) {
  CheckModel(R"({"input_shape": [4], "layers": [{"type": "dense", "units": 6}, {"type": "relu"},
                                                 {"type": "dense", "units": 3}]})",
             5);
}

TEST_P(DeviceExecutorTest, Conv3x3Valid) {
  CheckModel(R"({"input_shape": [6, 7, 2], "layers": [
      {"type": "conv2d", "filters": 4, "kernel_size": 3, "activation": "relu"},
      {"type": "flatten"}, {"type": "dense", "units": 3}]})",
             3);
}

TEST_P(DeviceExecutorTest, Conv3x3Same) {
  CheckModel(R"({"input_shape": [5, 6, 3], "layers": [
      {"type": "conv2d", "filters": 4, "kernel_size": 3, "padding": "same"},
      {"type": "flatten"}, {"type": "dense", "units": 3}]})",
             2);
}

TEST_P(DeviceExecutorTest, EvenKernelsSamePadAsTensorFlow) {
  // k = 2 and 4: TensorFlow pads floor((k-1)/2) on top/left and the rest on bottom/right.
  CheckModel(R"({"input_shape": [5, 5, 2], "layers": [
      {"type": "conv2d", "filters": 3, "kernel_size": 2, "padding": "same", "activation": "relu"},
      {"type": "conv2d", "filters": 2, "kernel_size": 4, "padding": "same"},
      {"type": "flatten"}, {"type": "dense", "units": 2}]})",
             2);
}

TEST_P(DeviceExecutorTest, Kernel1And5) {
  CheckModel(R"({"input_shape": [7, 6, 2], "layers": [
      {"type": "conv2d", "filters": 3, "kernel_size": 1},
      {"type": "conv2d", "filters": 2, "kernel_size": 5, "padding": "same", "activation": "relu"},
      {"type": "conv2d", "filters": 2, "kernel_size": 5},
      {"type": "flatten"}, {"type": "dense", "units": 2}]})",
             2);
}

TEST_P(DeviceExecutorTest, MaxPoolOddSizesDropBorder) {
  CheckModel(R"({"input_shape": [5, 7, 3], "layers": [
      {"type": "conv2d", "filters": 4, "kernel_size": 3, "padding": "same", "activation": "relu"},
      {"type": "max_pool2d"}, {"type": "flatten"}, {"type": "dense", "units": 3}]})",
             3);
}

TEST_P(DeviceExecutorTest, MaxPoolTiesGoToFirstMaximum) {
  // Inputs in {0, 1, 2}: most windows hold ties; the input gradient shows which element won.
  CheckModel(R"({"input_shape": [6, 6, 2], "layers": [
      {"type": "max_pool2d"}, {"type": "flatten"}, {"type": "dense", "units": 3}]})",
             4, /*levels=*/3);
  CheckModel(R"({"input_shape": [7, 9, 1], "layers": [
      {"type": "max_pool2d", "pool_size": 3}, {"type": "flatten"}, {"type": "dense", "units": 2}]})",
             2, 2);
}

TEST_P(DeviceExecutorTest, CnnPresetWholeModel) {
  CheckModel(R"({"input_shape": [28, 28, 1], "layers": [
      {"type": "conv2d", "filters": 32, "kernel_size": 3, "activation": "relu"}, {"type": "max_pool2d"},
      {"type": "conv2d", "filters": 64, "kernel_size": 3, "activation": "relu"}, {"type": "max_pool2d"},
      {"type": "flatten"}, {"type": "dense", "units": 64, "activation": "relu"},
      {"type": "dense", "units": 10}]})",
             4);
}

TEST_P(DeviceExecutorTest, BuffersFollowTheBatchSizeUpAndDown) {
  const ModelSpec model = ModelFromJson(R"({"input_shape": [6, 6, 1], "layers": [
      {"type": "conv2d", "filters": 2, "kernel_size": 3, "activation": "relu"}, {"type": "max_pool2d"},
      {"type": "flatten"}, {"type": "dense", "units": 3}]})");
  auto computer = Make(model);
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_NE(computer, nullptr);
  for (int b : {2, 7, 1, 7, 3}) {
    SCOPED_TRACE(b);
    CheckCompute(computer.get(), model, b);
  }
}

TEST_P(DeviceExecutorTest, EmptyBatchGivesZeroGradientsInReusedTensors) {
  const ModelSpec model = ModelFromJson(R"({"input_shape": [4], "layers": [{"type": "dense", "units": 3}]})");
  auto computer = Make(model);
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_NE(computer, nullptr);
  std::mt19937 rng(4);
  const std::vector<Tensor> params = RandomParams(model, &rng);
  std::vector<Tensor> grads;
  BatchMetrics m;
  ASSERT_TRUE(computer->Compute(params, RandomBatch(model, 5, &rng), 1.0f, &grads, &m).ok());
  const float* kernel_grad = grads[0].data<float>();
  ASSERT_TRUE(computer->Compute(params, RandomBatch(model, 0, &rng), 1.0f, &grads, &m).ok());
  EXPECT_EQ(grads[0].data<float>(), kernel_grad) << "the caller's tensors are reused";
  for (const Tensor& g : grads) {
    for (float v : g.flat()) EXPECT_EQ(v, 0.0f);
  }
  EXPECT_EQ(m.examples, 0);
  EXPECT_EQ(m.loss_sum, 0.0);
}

// The whole step against the worker's CPU GradientComputer (the reference implementation).
TEST_P(DeviceExecutorTest, MatchesCpuGradientComputer) {
  const char* models[] = {
      R"({"input_shape": [28, 28, 1], "layers": [
          {"type": "conv2d", "filters": 32, "kernel_size": 3, "activation": "relu"}, {"type": "max_pool2d"},
          {"type": "conv2d", "filters": 64, "kernel_size": 3, "activation": "relu"}, {"type": "max_pool2d"},
          {"type": "flatten"}, {"type": "dense", "units": 64, "activation": "relu"},
          {"type": "dense", "units": 10}]})",
      R"({"input_shape": [9, 9, 2], "loss": "mse", "layers": [
          {"type": "conv2d", "filters": 3, "kernel_size": 4, "padding": "same"}, {"type": "relu"},
          {"type": "max_pool2d", "pool_size": 3}, {"type": "flatten"}, {"type": "dense", "units": 2}]})"};
  for (const char* json : models) {
    const ModelSpec model = ModelFromJson(json);
    auto device = Make(model);
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_NE(device, nullptr);
    auto cpu = NewCpuGradientComputer(model, 2);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    std::mt19937 rng(77);
    const std::vector<Tensor> params = RandomParams(model, &rng, 0.2f);
    const Batch batch = RandomBatch(model, 6, &rng);
    std::vector<Tensor> got, want;
    BatchMetrics got_m, want_m;
    ASSERT_TRUE(device->Compute(params, batch, 1.0f / 6, &got, &got_m).ok());
    ASSERT_TRUE((*cpu)->Compute(params, batch, 1.0f / 6, &want, &want_m).ok());
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const std::vector<float> w = Flat(want[i]);
      ExpectClose(Flat(got[i]), std::vector<double>(w.begin(), w.end()), "grad " + std::to_string(i));
    }
    EXPECT_EQ(got_m.examples, want_m.examples);
    EXPECT_NEAR(got_m.loss_sum, want_m.loss_sum, 1e-4 * std::abs(want_m.loss_sum) + 1e-5);
    EXPECT_EQ(got_m.correct, want_m.correct);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceExecutorTest, ::testing::Values("emulation", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace pstrain
