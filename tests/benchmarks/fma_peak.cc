#include "tests/benchmarks/fma_peak.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace pstrain {
namespace isa_avx2 {
double FmaChains(int64_t iterations, float* sink);
}
namespace isa_avx512 {
double FmaChains(int64_t iterations, float* sink);
}

namespace {

double Chains(CpuLevel level, int64_t iterations, float* sink) {
  return level == CpuLevel::kAvx512 ? isa_avx512::FmaChains(iterations, sink) : isa_avx2::FmaChains(iterations, sink);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

double MeasureFmaPeak(CpuLevel level, int threads, double seconds) {
  // Calibrate on one thread: iterations that take about `seconds`.
  float sink = 0;
  int64_t iterations = 1 << 20;
  for (;;) {
    const auto start = std::chrono::steady_clock::now();
    Chains(level, iterations, &sink);
    const double took = Seconds(start);
    if (took > seconds / 8) {
      iterations = static_cast<int64_t>(iterations * seconds / took);
      break;
    }
    iterations *= 4;
  }
  // A peak is a best case: the best of three tries, so a thread started late or a neighbour's burst
  // of work on a shared machine does not lower it.
  double best = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<float> sinks(threads);
    std::vector<std::thread> pool;
    const auto start = std::chrono::steady_clock::now();
    for (int t = 1; t < threads; ++t) pool.emplace_back([&, t] { Chains(level, iterations, &sinks[t]); });
    const double flops = Chains(level, iterations, &sinks[0]) * threads;
    for (std::thread& t : pool) t.join();
    best = std::max(best, flops / Seconds(start) / 1e9);
  }
  return best;
}

std::string HostDescription() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU", family = "?", number = "?";
  bool avx512 = false;
  auto value = [](const std::string& l) { return std::string(absl::StripAsciiWhitespace(l.substr(l.find(':') + 1))); };
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "model name")) model = value(line);
    if (absl::StartsWith(line, "cpu family")) family = value(line);
    if (absl::StartsWith(line, "model\t")) number = value(line);
    if (absl::StartsWith(line, "flags")) avx512 = absl::StrContains(line, " avx512f");
    if (line.empty() && model != "unknown CPU") break;  // the first processor is enough
  }
  return absl::StrCat(model, " (family ", family, ", model ", number, "), AVX-512: ", avx512 ? "yes" : "no", ", ",
                      std::thread::hardware_concurrency(), " cores");
}

}  // namespace pstrain
