// Steady-state memory of the device executor: after the first steps size the buffers, further
// steps allocate nothing (counted in the backend, process-local), every allocation is returned on
// destruction, and on a GPU the device's free memory (cudaMemGetInfo) is the same before and after
// 1,000 steps. Registered RUN_SERIAL: cudaMemGetInfo sees the whole device, so no other test may
// run on it meanwhile. GPU cases skip with "no CUDA device: ..." where no GPU is visible.
#include <cstdio>
#include <random>

#include "gtest/gtest.h"
#include "tests/worker/cuda/naive_model_reference.h"
#include "worker/cuda/cuda_gradient_computer.h"
#include "worker/cuda/device_gradient_computer.h"
#include "worker/cuda/host_backend.h"
#ifdef PSTRAIN_HAVE_CUDA
#include "worker/cuda/cuda_backend.h"
#endif

namespace pstrain {
namespace {

constexpr char kSmallCnn[] = R"({"input_shape": [8, 8, 1], "layers": [
    {"type": "conv2d", "filters": 4, "kernel_size": 3, "activation": "relu"}, {"type": "max_pool2d"},
    {"type": "flatten"}, {"type": "dense", "units": 5, "activation": "relu"}, {"type": "dense", "units": 3}]})";

// Runs `steps` Compute calls of the small CNN at batch 32.
void RunSteps(GradientComputer* c, int steps) {
  const ModelSpec model = ModelFromJson(kSmallCnn);
  std::mt19937 rng(5);
  const std::vector<Tensor> params = RandomParams(model, &rng);
  const Batch batch = RandomBatch(model, 32, &rng);
  std::vector<Tensor> grads;
  BatchMetrics m;
  for (int i = 0; i < steps; ++i) ASSERT_TRUE(c->Compute(params, batch, 1.0f / 32, &grads, &m).ok()) << i;
}

TEST(DeviceMemoryTest, EmulatedStepsAllocateNothingAndFreeEverything) {
  auto counters = std::make_shared<HostBackend::Counters>();
  {
    auto c = DeviceGradientComputer::Create(ModelFromJson(kSmallCnn), std::make_unique<HostBackend>(counters), {});
    ASSERT_TRUE(c.ok()) << c.status();
    RunSteps(c->get(), 1);
    const int64_t after_first = counters->total_allocations;
    RunSteps(c->get(), 200);  // emulation is slow; the GPU case below runs 1,000
    EXPECT_EQ(counters->total_allocations, after_first) << "steady-state steps must reuse their buffers";
  }
  EXPECT_EQ(counters->live_allocations, 0);
}

TEST(DeviceMemoryTest, NoDeviceMemoryLeakOver1000Steps) {
#ifdef PSTRAIN_HAVE_CUDA
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device: no GPU is visible on this machine";
  auto backend = NewCudaBackend(0);
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto c = DeviceGradientComputer::Create(ModelFromJson(kSmallCnn), std::move(*backend), {});
  ASSERT_TRUE(c.ok()) << c.status();
  RunSteps(c->get(), 2);  // buffers and cuBLAS workspaces exist from here on
  const int64_t allocations = (*c)->backend().allocation_count();
  auto before = CudaDeviceMemory(0);
  ASSERT_TRUE(before.ok()) << before.status();
  RunSteps(c->get(), 1000);
  auto after = CudaDeviceMemory(0);
  ASSERT_TRUE(after.ok()) << after.status();
  std::printf("cuda:0 free device memory: %lld bytes before, %lld after 1000 steps; %lld allocations\n",
              static_cast<long long>(before->free_bytes), static_cast<long long>(after->free_bytes),
              static_cast<long long>((*c)->backend().allocation_count()));
  EXPECT_EQ((*c)->backend().allocation_count(), allocations) << "steady-state steps must reuse their buffers";
  EXPECT_EQ(after->free_bytes, before->free_bytes);
#else
  GTEST_SKIP() << "no CUDA device: built without CUDA (nvcc not found or PSTRAIN_CUDA=OFF)";
#endif
}

}  // namespace
}  // namespace pstrain
