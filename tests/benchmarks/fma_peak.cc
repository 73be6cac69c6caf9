#include "tests/benchmarks/fma_peak.h"

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
  std::vector<float> sinks(threads);
  std::vector<std::thread> pool;
  const auto start = std::chrono::steady_clock::now();
  double flops = 0;
  for (int t = 1; t < threads; ++t) pool.emplace_back([&, t] { Chains(level, iterations, &sinks[t]); });
  flops = Chains(level, iterations, &sinks[0]) * threads;
  for (std::thread& t : pool) t.join();
  return flops / Seconds(start) / 1e9;
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
