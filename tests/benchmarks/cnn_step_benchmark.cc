// Compute-only throughput of the CPU GradientComputer on the `cnn` preset (random data, batch 64):
// examples/s and GFLOP/s at 1 and 2 threads. Usage: cnn_step_benchmark [steps] [batch]
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "common/job_spec.h"
#include "common/model_variables.h"
#include "worker/cpu/cpu_gradient_computer.h"

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  const int64_t batch_size = argc > 2 ? std::atoll(argv[2]) : 64;
  auto job = pstrain::LoadJobSpec("cnn");
  auto vars = pstrain::ModelVariables(job->model);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  std::vector<pstrain::Tensor> params;
  for (const auto& v : *vars) {
    params.emplace_back(pstrain::DType::kFloat32, v.shape);
    for (float& x : params.back().flat()) x = u(rng);
  }
  pstrain::Batch batch;
  batch.inputs = pstrain::Tensor(pstrain::DType::kFloat32, {batch_size, 28, 28, 1});
  for (float& x : batch.inputs.flat()) x = u(rng) + 0.1f;
  for (int64_t i = 0; i < batch_size; ++i) batch.labels.push_back(static_cast<int32_t>(i % 10));
  for (int threads : {1, 2}) {
    auto gc = pstrain::NewCpuGradientComputer(job->model, threads);
    std::vector<pstrain::Tensor> grads;
    pstrain::BatchMetrics m;
    for (int i = 0; i < 10; ++i) (void)(*gc)->Compute(params, batch, 1.0f / batch_size, &grads, &m);
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    for (int i = 0; i < steps; ++i) (void)(*gc)->Compute(params, batch, 1.0f / batch_size, &grads, &m);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    const double eps = steps * batch_size / s;
    // Per CPU-second: what one core delivers, less sensitive to other load on a shared machine.
    const double per_cpu = steps * batch_size / cpu;
    std::printf("threads=%d batch=%lld examples/s=%.0f GFLOP/s=%.1f  examples/cpu-s=%.0f (%.1f GFLOP/cpu-s)\n",
                threads, static_cast<long long>(batch_size), eps, eps * 14.78e6 / 1e9, per_cpu,
                per_cpu * 14.78e6 / 1e9);
  }
  return 0;
}
