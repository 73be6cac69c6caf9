// Training-step throughput of the `cnn` preset on the GPU (NewCudaGradientComputer) against the CPU
// GradientComputer, at batch 64 and 512 by default. One step is what a worker does per batch:
// parameters host -> device, forward, loss, backward, gradients device -> host (random data).
// Prints one RESULT line per configuration and the GPU/CPU ratio; never asserts on time.
// Usage: cuda_cnn_benchmark [steps=200] [batch...]   (run_cuda_benchmark.sh adds the PyTorch peer)
// Without a GPU it prints the CPU figures and says the GPU part was skipped.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "common/config/job_spec.h"
#include "common/plan/model_variables.h"
#include "worker/cuda/cuda_gradient_computer.h"
#ifdef PSTRAIN_HAVE_CPU_GRADIENT_COMPUTER
#include "worker/cpu/cpu_gradient_computer.h"
#endif

namespace {

struct Inputs {
  std::vector<pstrain::Tensor> params;
  pstrain::Batch batch;
};

Inputs RandomInputs(const pstrain::ModelSpec& model, int64_t batch_size) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  Inputs in;
  const std::vector<pstrain::VariableSpec> vars = pstrain::ModelVariables(model).value();  // owned copy
  for (const pstrain::VariableSpec& v : vars) {
    in.params.emplace_back(pstrain::DType::kFloat32, v.shape);
    for (float& x : in.params.back().flat()) x = u(rng);
  }
  in.batch.inputs = pstrain::Tensor(pstrain::DType::kFloat32, {batch_size, 28, 28, 1});
  for (float& x : in.batch.inputs.flat()) x = u(rng) + 0.1f;
  for (int64_t i = 0; i < batch_size; ++i) in.batch.labels.push_back(static_cast<int32_t>(i % 10));
  return in;
}

// Examples per second over `steps` Compute calls after 10 warm-up steps; -1 on error.
double Throughput(pstrain::GradientComputer* gc, const Inputs& in, int steps) {
  const int64_t b = in.batch.size();
  std::vector<pstrain::Tensor> grads;
  pstrain::BatchMetrics m;
  for (int i = 0; i < 10; ++i) {
    const absl::Status s = gc->Compute(in.params, in.batch, 1.0f / b, &grads, &m);
    if (!s.ok()) {
      std::fprintf(stderr, "Compute failed: %s\n", s.ToString().c_str());
      return -1;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) (void)gc->Compute(in.params, in.batch, 1.0f / b, &grads, &m);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return steps * b / s;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  std::vector<int64_t> batches;
  for (int i = 2; i < argc; ++i) batches.push_back(std::atoll(argv[i]));
  if (batches.empty()) batches = {64, 512};
  const pstrain::ModelSpec model = pstrain::LoadJobSpec("cnn").value().model;
  const bool gpu = pstrain::CudaDeviceCount() > 0;
  if (!gpu) {
    std::printf("no CUDA device (%s): GPU figures skipped\n",
                pstrain::CudaSupportBuilt() ? "no GPU visible" : "built without CUDA");
  }
  for (int64_t b : batches) {
    const Inputs in = RandomInputs(model, b);
    double gpu_eps = -1, cpu_eps = -1;
    if (gpu) {
      auto gc = pstrain::NewCudaGradientComputer(model, 0);
      if (!gc.ok()) {
        std::fprintf(stderr, "%s\n", gc.status().ToString().c_str());
        return 1;
      }
      gpu_eps = Throughput(gc->get(), in, steps);
      std::printf("RESULT impl=pstrain-cuda device=cuda:0 batch=%lld examples_per_s=%.0f ms_per_step=%.3f\n",
                  static_cast<long long>(b), gpu_eps, 1e3 * b / gpu_eps);
    }
#ifdef PSTRAIN_HAVE_CPU_GRADIENT_COMPUTER
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    auto cpu = pstrain::NewCpuGradientComputer(model, threads);
    if (cpu.ok()) {
      cpu_eps = Throughput(cpu->get(), in, std::max(1, steps / 20));
      std::printf("RESULT impl=pstrain-cpu threads=%d batch=%lld examples_per_s=%.0f\n", threads,
                  static_cast<long long>(b), cpu_eps);
    }
#else
    std::printf("CPU GradientComputer not in this build: CPU figures skipped\n");
#endif
    if (gpu_eps > 0 && cpu_eps > 0) {
      std::printf("RATIO batch=%lld cuda/cpu=%.1fx\n", static_cast<long long>(b), gpu_eps / cpu_eps);
    }
  }
  return 0;
}
