// Compute-only speed of the CPU path on the `cnn` preset (random data): every kernel of one step
// (one thread on the per-thread share of the batch) and the whole step (GradientComputer, 1 and 2
// threads), each as GFLOP/s and as a share of the FP32 FMA peak measured in the same run.
// FLOPs are the model's nominal counts (14.78 MFLOP per example forward+backward, as the PyTorch
// peer counts them); the fused conv+pool skips conv outputs that pooling drops, so it executes
// fewer (printed beside). Runs at the active CPU level (PSTRAIN_CPU_LEVEL forces a lower one).
// Usage: cnn_step_benchmark [steps=200] [batch=64]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/config/job_spec.h"
#include "common/plan/model_variables.h"
#include "common/platform/cpu_level.h"
#include "tests/benchmarks/fma_peak.h"
#include "worker/cpu/conv2d.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/cpu/dense.h"
#include "worker/cpu/loss.h"

namespace pstrain {
namespace {

constexpr double kStepFlopsPerExample = 14778624;  // README of the PyTorch peer: 2 x 7,389,312 MACs

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::vector<float> Random(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

struct Peaks {
  double one = 0, two = 0;  // GFLOP/s of the active level's vector width, 1 and 2 threads
};

struct KernelTime {
  const char* name;
  double flops_per_example;           // nominal
  double executed_flops_per_example;  // what the kernel really does
  std::vector<double> seconds;
};

// One thread runs the cnn layer by layer on `batch` examples; each kernel call is timed.
void TimeKernels(int64_t batch, int steps, const Peaks& peak) {
  Conv2D conv1({28, 28, 1, 32, 3, false, true, true, 2});
  Conv2D conv2({13, 13, 32, 64, 3, false, true, true, 2});
  Dense fc1({1600, 64, true, true}), fc2({64, 10, false, true});
  const std::vector<float> x = Random(batch * 784, 1, 1.f), w1 = Random(9 * 32, 2, 0.3f), b1 = Random(32, 3, 0.1f),
                           w2 = Random(288 * 64, 4, 0.1f), b2 = Random(64, 5, 0.1f), w3 = Random(1600 * 64, 6, 0.05f),
                           b3 = Random(64, 7, 0.1f), w4 = Random(640, 8, 0.2f), b4 = Random(10, 9, 0.1f);
  std::vector<int32_t> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<int32_t>(i % 10);
  std::vector<float> a1(batch * 5408), a2(batch * 1600), a3(batch * 64), a4(batch * 10);
  std::vector<float> d4(batch * 10), d3(batch * 64), d2(batch * 1600), d1(batch * 5408);
  std::vector<float> gw1(w1.size()), gb1(32), gw2(w2.size()), gb2(64), gw3(w3.size()), gb3(64), gw4(640), gb4(10);
  const double c1 = 2.0 * 26 * 26 * 32 * 9, c2 = 2.0 * 11 * 11 * 64 * 288, c2_done = 2.0 * 10 * 10 * 64 * 288;
  std::vector<KernelTime> k = {
      {"conv1+relu+pool forward", c1, c1, {}},
      {"conv2+relu+pool forward", c2, c2_done, {}},
      {"fc1 forward", 2.0 * 1600 * 64, 2.0 * 1600 * 64, {}},
      {"fc2 forward", 2.0 * 640, 2.0 * 640, {}},
      {"softmax cross-entropy", 0, 0, {}},
      {"fc2 backward", 4.0 * 640, 4.0 * 640, {}},
      {"fc1 backward", 4.0 * 1600 * 64, 4.0 * 1600 * 64, {}},
      {"conv2 backward (dW, dx)", 2 * c2, 2 * c2_done, {}},
      {"conv1 backward (dW)", c1, c1, {}},
  };
  std::vector<std::function<void()>> calls = {
      [&] { conv1.Forward(x.data(), batch, w1.data(), b1.data(), a1.data()); },
      [&] { conv2.Forward(a1.data(), batch, w2.data(), b2.data(), a2.data()); },
      [&] { fc1.Forward(a2.data(), batch, w3.data(), b3.data(), a3.data()); },
      [&] { fc2.Forward(a3.data(), batch, w4.data(), b4.data(), a4.data()); },
      [&] {
        int64_t correct = 0;
        SoftmaxCrossEntropy(a4.data(), labels.data(), batch, 10, 1.f / batch, d4.data(), &correct);
      },
      [&] { fc2.Backward(a3.data(), a4.data(), d4.data(), batch, w4.data(), d3.data(), gw4.data(), gb4.data()); },
      [&] { fc1.Backward(a2.data(), a3.data(), d3.data(), batch, w3.data(), d2.data(), gw3.data(), gb3.data()); },
      [&] { conv2.Backward(a1.data(), a2.data(), d2.data(), batch, w2.data(), d1.data(), gw2.data(), gb2.data()); },
      [&] { conv1.Backward(x.data(), a1.data(), d1.data(), batch, w1.data(), nullptr, gw1.data(), gb1.data()); },
  };
  for (int s = 0; s < steps + 5; ++s) {
    for (size_t i = 0; i < calls.size(); ++i) {
      const auto start = Clock::now();
      calls[i]();
      if (s >= 5) k[i].seconds.push_back(Seconds(start));
    }
  }
  std::printf("\nper kernel: one thread, %lld examples per call, median of %d steps\n", static_cast<long long>(batch),
              steps);
  std::printf("%-26s %9s %9s %9s %12s\n", "kernel", "ms/call", "GFLOP/s", "% peak", "executed");
  double total = 0, flops = 0;
  for (const KernelTime& t : k) {
    const double s = Median(t.seconds), g = t.flops_per_example * batch / s / 1e9;
    total += s;
    flops += t.flops_per_example * batch;
    if (t.flops_per_example == 0) {
      std::printf("%-26s %9.3f %9s %9s\n", t.name, s * 1e3, "-", "-");
      continue;
    }
    std::printf("%-26s %9.3f %9.1f %8.1f%% %11.1f%%\n", t.name, s * 1e3, g, 100 * g / peak.one,
                100 * t.executed_flops_per_example / t.flops_per_example);
  }
  const double g = flops / total / 1e9;
  std::printf("%-26s %9.3f %9.1f %8.1f%%   (%% of the 1-thread peak, %.1f GFLOP/s)\n", "sum of kernels", total * 1e3, g,
              100 * g / peak.one, peak.one);
}

// The peak is measured again after every round of steps (same threads): the share uses the best of
// all, so that a burst of other work during the first measurement does not inflate it.
void TimeSteps(int64_t batch, int steps, CpuLevel peak_level, Peaks peak, const char* peak_name) {
  auto job = LoadJobSpec("cnn");
  auto vars = ModelVariables(job->model);
  std::vector<Tensor> params;
  uint32_t seed = 10;
  for (const VariableSpec& v : *vars) {
    params.emplace_back(DType::kFloat32, v.shape);
    const std::vector<float> r = Random(params.back().num_elements(), seed++, 0.1f);
    std::copy(r.begin(), r.end(), params.back().flat().begin());
  }
  Batch b;
  b.inputs = Tensor(DType::kFloat32, {batch, 28, 28, 1});
  const std::vector<float> r = Random(b.inputs.num_elements(), 99, 0.5f);
  std::transform(r.begin(), r.end(), b.inputs.flat().begin(), [](float v) { return v + 0.5f; });
  for (int64_t i = 0; i < batch; ++i) b.labels.push_back(static_cast<int32_t>(i % 10));
  std::printf("\nwhole step (GradientComputer), batch %lld, median of 5 rounds of %d steps\n",
              static_cast<long long>(batch), steps / 5);
  std::printf("%-8s %12s %9s %22s (peak: best measured between rounds)\n", "threads", "examples/s", "GFLOP/s",
              peak_name);
  for (int threads : {1, 2}) {
    auto gc = NewCpuGradientComputer(job->model, threads);
    std::vector<Tensor> grads;
    BatchMetrics m;
    for (int i = 0; i < 10; ++i) (void)(*gc)->Compute(params, b, 1.0f / batch, &grads, &m);
    std::vector<double> rates;
    double& p = threads == 1 ? peak.one : peak.two;
    for (int round = 0; round < 5; ++round) {
      const auto start = Clock::now();
      for (int i = 0; i < steps / 5; ++i) (void)(*gc)->Compute(params, b, 1.0f / batch, &grads, &m);
      rates.push_back((steps / 5) * batch / Seconds(start));
      p = std::max(p, MeasureFmaPeak(peak_level, threads, 0.1));
    }
    const double eps = Median(rates), g = eps * kStepFlopsPerExample / 1e9;
    std::printf("%-8d %12.0f %9.1f %8.1f%% of %6.1f\n", threads, eps, g, 100 * g / p, p);
  }
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace
}  // namespace pstrain

int main(int argc, char** argv) {
  using pstrain::CpuLevel;
  const int steps = argc > 1 ? std::max(5, std::atoi(argv[1])) : 200;
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 64;
  auto level = pstrain::ConfigureCpuLevel(std::getenv(pstrain::kCpuLevelEnv));
  if (!level.ok()) {
    std::fprintf(stderr, "cnn_step_benchmark: %s\n", std::string(level.status().message()).c_str());
    return 2;
  }
  std::printf("host: %s\nload average: %s\ncpu kernels: %s\n", pstrain::HostDescription().c_str(),
              pstrain::LoadAverage().c_str(), pstrain::DescribeCpuLevel().c_str());
  std::printf("FP32 FMA peak, GFLOP/s:");
  pstrain::Peaks avx2, avx512;
  for (CpuLevel l : {CpuLevel::kAvx2, CpuLevel::kAvx512}) {
    if (l > pstrain::DetectCpuLevel()) continue;
    pstrain::Peaks& p = l == CpuLevel::kAvx2 ? avx2 : avx512;
    p.one = pstrain::MeasureFmaPeak(l, 1, 0.2);
    p.two = pstrain::MeasureFmaPeak(l, 2, 0.2);
    std::printf("  %s %.1f (1 thread) %.1f (2 threads);", pstrain::CpuLevelName(l), p.one, p.two);
  }
  std::printf("\n");
  // Shares are of the widest peak this CPU has (AVX2 when it lacks AVX-512), whatever level runs.
  const bool wide = pstrain::DetectCpuLevel() == CpuLevel::kAvx512;
  const pstrain::Peaks& peak = wide ? avx512 : avx2;
  const char* peak_name = wide ? "of the AVX-512 peak" : "of the AVX2 peak";
  pstrain::TimeKernels(batch / 2, steps, peak);
  pstrain::TimeSteps(batch, steps, wide ? CpuLevel::kAvx512 : CpuLevel::kAvx2, peak, peak_name);
  return 0;
}
