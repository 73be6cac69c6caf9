// Prints the FP32 FMA peak of this machine at the AVX2 and AVX-512 vector widths, on 1 and 2
// threads (fma_peak.h). Usage: fma_peak_benchmark [seconds per figure, default 0.5]
#include <cstdio>
#include <cstdlib>

#include "common/platform/cpu_level.h"
#include "tests/benchmarks/fma_peak.h"

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  std::printf("host: %s\n", pstrain::HostDescription().c_str());
  std::printf("%-8s %8s %12s %14s\n", "level", "threads", "GFLOP/s", "per thread");
  for (pstrain::CpuLevel level : {pstrain::CpuLevel::kAvx2, pstrain::CpuLevel::kAvx512}) {
    if (level > pstrain::DetectCpuLevel()) {
      std::printf("%-8s (this CPU does not support it)\n", pstrain::CpuLevelName(level));
      continue;
    }
    for (int threads : {1, 2}) {
      const double g = pstrain::MeasureFmaPeak(level, threads, seconds);
      std::printf("%-8s %8d %12.1f %14.1f\n", pstrain::CpuLevelName(level), threads, g, g / threads);
    }
  }
  return 0;
}
