// The FP32 FMA peak of the machine a benchmark runs on, measured in the same run so that kernel
// figures can be printed as a share of it: independent FMA chains in registers at one CPU level's
// vector width (avx2: 8 floats, avx512: 16), on 1 or more threads at once.
// Thread-safety: MeasureFmaPeak starts and joins its own threads; call it from one thread.
#ifndef PSTRAIN_TESTS_BENCHMARKS_FMA_PEAK_H_
#define PSTRAIN_TESTS_BENCHMARKS_FMA_PEAK_H_

#include <string>

#include "common/platform/cpu_level.h"

namespace pstrain {

// GFLOP/s of `threads` threads running FMA chains at `level` for about `seconds`, best of 3 tries.
// REQUIRES: level is kAvx2 or kAvx512 and level <= DetectCpuLevel().
double MeasureFmaPeak(CpuLevel level, int threads, double seconds);

// "AMD EPYC (family 26, model 2), AVX-512: yes" from /proc/cpuinfo.
std::string HostDescription();

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_BENCHMARKS_FMA_PEAK_H_
