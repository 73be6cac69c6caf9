// The public CUDA API (cuda_gradient_computer.h): device parsing, behaviour without a GPU, input
// errors, backend failures as statuses, and concurrent replicas (memory: cuda_memory_test.cc).
// GPU cases skip with "no CUDA device: ..." where no GPU is visible.
// Tolerance for the whole-model check: 1e-4 + 1e-3 * |want| per gradient element.
#include "worker/cuda/cuda_gradient_computer.h"

#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "tests/worker/cuda/naive_model_reference.h"
#include "worker/cuda/device_gradient_computer.h"
#include "worker/cuda/host_backend.h"

namespace pstrain {
namespace {

constexpr char kSmallCnn[] = R"({"input_shape": [8, 8, 1], "layers": [
    {"type": "conv2d", "filters": 4, "kernel_size": 3, "activation": "relu"}, {"type": "max_pool2d"},
    {"type": "flatten"}, {"type": "dense", "units": 5, "activation": "relu"}, {"type": "dense", "units": 3}]})";

#define SKIP_WITHOUT_GPU()                                                                           \
  do {                                                                                               \
    if (!CudaSupportBuilt())                                                                         \
      GTEST_SKIP() << "no CUDA device: built without CUDA (nvcc not found or PSTRAIN_CUDA=OFF)";     \
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device: no GPU is visible on this machine"; \
  } while (0)

TEST(ParseCudaDeviceTest, AcceptsCudaAndCudaIndex) {
  EXPECT_EQ(*ParseCudaDevice("cuda"), 0);
  EXPECT_EQ(*ParseCudaDevice("cuda:0"), 0);
  EXPECT_EQ(*ParseCudaDevice("cuda:3"), 3);
  EXPECT_EQ(*ParseCudaDevice("cuda:12"), 12);
}

TEST(ParseCudaDeviceTest, RejectsEverythingElse) {
  for (const char* bad : {"", "cpu", "gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:1x", "cuda0", "CUDA", "cuda:+1"}) {
    absl::StatusOr<int> d = ParseCudaDevice(bad);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(ParseCudaDevice("gpu").status().message().find("cuda:N"), std::string::npos);
}

TEST(CudaDeviceTest, CountNeverFails) { EXPECT_GE(CudaDeviceCount(), 0); }

TEST(CudaDeviceTest, FactoryWithoutGpuSaysWhy) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a GPU is visible; this case is for machines without one";
  auto c = NewCudaGradientComputer(ModelFromJson(kSmallCnn), 0);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string msg(c.status().message());
  std::printf("without a GPU: %s\n", msg.c_str());
  EXPECT_TRUE(msg.find("no CUDA device") != std::string::npos || msg.find("built without CUDA") != std::string::npos)
      << msg;
}

TEST(CudaDeviceTest, ReplicaFactoryWithoutGpuSaysWhy) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a GPU is visible; this case is for machines without one";
  CudaComputerFactory factory = NewCudaComputerFactory(0, 2);
  auto c = factory(ModelFromJson(kSmallCnn), 1);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition) << c.status();
}

TEST(CudaDeviceTest, ReplicaFactoryBuildsOnePerReplica) {
  SKIP_WITHOUT_GPU();
  const ModelSpec model = ModelFromJson(kSmallCnn);
  CudaComputerFactory factory = NewCudaComputerFactory(0, 2);
  EXPECT_TRUE(factory(model, 1).ok());
  EXPECT_TRUE(factory(model, 1).ok());
  CudaComputerFactory missing = NewCudaComputerFactory(CudaDeviceCount(), 1);
  EXPECT_EQ(missing(model, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CudaDeviceTest, FactoryForDeviceChecksTheFlagAndTheMachine) {
  EXPECT_EQ(CudaFactoryForDevice("gpu0", 1).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<CudaComputerFactory> f = CudaFactoryForDevice("cuda", 2);
  if (CudaDeviceCount() == 0) {
    EXPECT_EQ(f.status().code(), absl::StatusCode::kFailedPrecondition);
    std::printf("--device=cuda without a GPU: %s\n", std::string(f.status().message()).c_str());
    return;
  }
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE((*f)(ModelFromJson(kSmallCnn), 1).ok());
  const std::string beyond = "cuda:" + std::to_string(CudaDeviceCount());
  EXPECT_EQ(CudaFactoryForDevice(beyond, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CudaDeviceTest, OutOfRangeDeviceIsInvalidArgument) {
  SKIP_WITHOUT_GPU();
  auto c = NewCudaGradientComputer(ModelFromJson(kSmallCnn), CudaDeviceCount());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
}

TEST(CudaGradientComputerTest, RejectsInputsThatDoNotFitTheModel) {
  SKIP_WITHOUT_GPU();
  const ModelSpec model = ModelFromJson(kSmallCnn);
  auto c = NewCudaGradientComputer(model, 0);
  ASSERT_TRUE(c.ok()) << c.status();
  std::mt19937 rng(3);
  std::vector<Tensor> params = RandomParams(model, &rng);
  Batch batch = RandomBatch(model, 4, &rng);
  std::vector<Tensor> grads;
  BatchMetrics m;
  std::vector<Tensor> short_params(params.begin(), params.end() - 1);
  EXPECT_EQ((*c)->Compute(short_params, batch, 1.0f, &grads, &m).code(), absl::StatusCode::kInvalidArgument);
  Batch bad_label = batch;
  bad_label.labels[1] = 3;
  EXPECT_EQ((*c)->Compute(params, bad_label, 1.0f, &grads, &m).code(), absl::StatusCode::kInvalidArgument);
  Batch bad_shape = RandomBatch(ModelFromJson(R"({"input_shape": [8, 7, 1], "layers": [{"type": "flatten"},
      {"type": "dense", "units": 3}]})"),
                                4, &rng);
  EXPECT_EQ((*c)->Compute(params, bad_shape, 1.0f, &grads, &m).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE((*c)->Compute(params, batch, 1.0f, &grads, &m).ok());  // still usable afterwards
}

TEST(CudaGradientComputerTest, WholeModelMatchesReference) {
  SKIP_WITHOUT_GPU();
  for (int device = 0; device < std::min(CudaDeviceCount(), 2); ++device) {
    const ModelSpec model = ModelFromJson(kSmallCnn);
    auto c = NewCudaGradientComputer(model, device);
    ASSERT_TRUE(c.ok()) << c.status();
    std::mt19937 rng(11);
    const std::vector<Tensor> params = RandomParams(model, &rng);
    const Batch batch = RandomBatch(model, 16, &rng);
    std::vector<Tensor> grads;
    BatchMetrics m;
    ASSERT_TRUE((*c)->Compute(params, batch, 1.0f / 16, &grads, &m).ok());
    const ReferenceResult want = NaiveReference(model, params, batch, 1.0 / 16);
    for (size_t i = 0; i < grads.size(); ++i) {
      for (int64_t j = 0; j < grads[i].num_elements(); ++j) {
        ASSERT_NEAR(grads[i].flat()[j], want.param_grads[i][j], 1e-4 + 1e-3 * std::abs(want.param_grads[i][j]))
            << "cuda:" << device << " grad " << i << "[" << j << "]";
      }
    }
    EXPECT_NEAR(m.loss_sum, want.loss_sum, 1e-4 * want.loss_sum);
    EXPECT_EQ(m.correct, want.correct);
  }
}

// The emulation backend with injected failures, named as the CUDA backend names its errors.
class FailingBackend : public HostBackend {
 public:
  int fail_gemm_call = -1;  // the n-th Gemm (0-based) fails; -1 never
  bool fail_malloc = false;
  absl::StatusOr<float*> Malloc(int64_t count) override {
    if (fail_malloc) return absl::ResourceExhaustedError("cudaMalloc on cuda:0: out of memory");
    return HostBackend::Malloc(count);
  }
  absl::Status Gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                    int ldb, float beta, float* c, int ldc) override {
    if (gemm_calls_++ == fail_gemm_call) return absl::InternalError("cublasSgemm on cuda:0: execution failed");
    return HostBackend::Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }

 private:
  int gemm_calls_ = 0;
};

TEST(DeviceErrorTest, BackendFailuresBecomeStatusesAndTheComputerRecovers) {
  const ModelSpec model = ModelFromJson(kSmallCnn);
  auto oom = std::make_unique<FailingBackend>();
  oom->fail_malloc = true;
  auto none = DeviceGradientComputer::Create(model, std::move(oom), {});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(none.status().message().find("cudaMalloc on cuda:0"), std::string::npos);

  auto backend = std::make_unique<FailingBackend>();
  backend->fail_gemm_call = 4;  // inside the first step's backward pass
  auto c = DeviceGradientComputer::Create(model, std::move(backend), {});
  ASSERT_TRUE(c.ok()) << c.status();
  std::mt19937 rng(2);
  const std::vector<Tensor> params = RandomParams(model, &rng);
  const Batch batch = RandomBatch(model, 4, &rng);
  std::vector<Tensor> grads;
  BatchMetrics m;
  const absl::Status failed = (*c)->Compute(params, batch, 0.25f, &grads, &m);
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
  EXPECT_NE(failed.message().find("cublasSgemm on cuda:0"), std::string::npos) << failed;
  ASSERT_TRUE((*c)->Compute(params, batch, 0.25f, &grads, &m).ok());
  const ReferenceResult want = NaiveReference(model, params, batch, 0.25);
  EXPECT_NEAR(m.loss_sum, want.loss_sum, 1e-4 * want.loss_sum);
  EXPECT_NEAR(grads[0].flat()[0], want.param_grads[0][0], 1e-4 + 1e-3 * std::abs(want.param_grads[0][0]));
}

TEST(CudaGradientComputerTest, ConcurrentReplicasAgreeWithASingleOne) {
  SKIP_WITHOUT_GPU();
  const ModelSpec model = ModelFromJson(kSmallCnn);
  std::mt19937 rng(9);
  const std::vector<Tensor> params = RandomParams(model, &rng);
  const Batch batch = RandomBatch(model, 8, &rng);
  std::vector<std::vector<Tensor>> grads(3);
  std::vector<absl::Status> status(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      auto c = NewCudaGradientComputer(model, r % CudaDeviceCount());
      if (!c.ok()) {
        status[r] = c.status();
        return;
      }
      BatchMetrics m;
      for (int i = 0; i < 20 && status[r].ok(); ++i) status[r] = (*c)->Compute(params, batch, 0.125f, &grads[r], &m);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r];
    for (size_t i = 0; i < grads[0].size(); ++i) {
      for (int64_t j = 0; j < grads[0][i].num_elements(); ++j) {
        ASSERT_NEAR(grads[r][i].flat()[j], grads[0][i].flat()[j], 1e-6) << "replica " << r;
      }
    }
  }
}

}  // namespace
}  // namespace pstrain
