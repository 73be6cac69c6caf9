// The instruction-set level the hot CPU kernels run at. Every kernel that matters for speed (GEMMs,
// convolution, pooling, bias + activation, the optimizer loops) is compiled once per level into
// the same binary (pstrain_isa_objects in CMakeLists.txt), and the process picks one level at
// start-up: the best one this CPU and its OS support (cpuid + xgetbv), or a lower one named by
// PSTRAIN_CPU_LEVEL (for testing and comparisons). A portable build therefore runs AVX-512 code on
// an AVX-512 host without -march=native.
//   baseline  x86-64 (SSE2), 4 floats per vector, no FMA
//   avx2      x86-64-v3 (AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE), 8 floats per vector
//   avx512    x86-64-v4 (AVX-512 F, BW, CD, DQ, VL on top of avx2), 16 floats per vector
// AMD Zen 4 runs AVX-512 at the FLOP rate of AVX2 (its 512-bit FMAs take two 256-bit passes): it
// still gets avx512, which is never slower there (half the instructions, twice the registers).
// Results are bit-for-bit reproducible for one level and one thread count; levels differ in the
// last bits (FMA contraction, summation order).
// Thread-safety: Detect/Resolve are pure; ConfigureCpuLevel is meant for main() before threads
// start, ActiveCpuLevel is safe to call from any thread.
#ifndef PSTRAIN_COMMON_PLATFORM_CPU_LEVEL_H_
#define PSTRAIN_COMMON_PLATFORM_CPU_LEVEL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pstrain {

enum class CpuLevel { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };

// The environment variable that forces a (lower) level.
inline constexpr char kCpuLevelEnv[] = "PSTRAIN_CPU_LEVEL";

// "baseline", "avx2", "avx512".
const char* CpuLevelName(CpuLevel level);

// Every level from baseline up to and including `top`.
std::vector<CpuLevel> LevelsUpTo(CpuLevel top);

// The best level this CPU and OS can run (cpuid feature bits, and xgetbv for the register state
// the OS saves). Computed once; cheap afterwards.
CpuLevel DetectCpuLevel();

// The level to run given the value of PSTRAIN_CPU_LEVEL (`requested`, empty = `supported`).
// InvalidArgument naming the variable for an unknown name, or for a level above `supported`.
absl::StatusOr<CpuLevel> ResolveCpuLevel(absl::string_view requested, CpuLevel supported);

// Sets the process's level from `requested` (the environment variable's value; null or empty =
// the best detected). Errors as ResolveCpuLevel; the level is unchanged on error.
absl::StatusOr<CpuLevel> ConfigureCpuLevel(const char* requested);

// The level kernels run at: the configured one, else the detected best.
CpuLevel ActiveCpuLevel();

// One line for the task logs, e.g. "avx512 (16 floats per vector, FMA; the best this CPU has)" or
// "avx2 (8 floats per vector, FMA; forced by PSTRAIN_CPU_LEVEL, this CPU has avx512)".
std::string DescribeCpuLevel();

// The one of three per-level things (kernel tables) for `level`; only the chosen getter is called,
// since the others may hold instructions this CPU lacks.
template <typename T>
const T& PickForLevel(CpuLevel level, const T& (*baseline)(), const T& (*avx2)(), const T& (*avx512)()) {
  switch (level) {
    case CpuLevel::kAvx512:
      return avx512();
    case CpuLevel::kAvx2:
      return avx2();
    case CpuLevel::kBaseline:
      break;
  }
  return baseline();
}

// Test-only: runs kernels at `level` until destroyed, then restores the previous level.
// REQUIRES: level <= DetectCpuLevel(); no kernel runs concurrently on another thread.
class ScopedCpuLevelForTest {
 public:
  explicit ScopedCpuLevelForTest(CpuLevel level);
  ~ScopedCpuLevelForTest();
  ScopedCpuLevelForTest(const ScopedCpuLevelForTest&) = delete;
  ScopedCpuLevelForTest& operator=(const ScopedCpuLevelForTest&) = delete;

 private:
  CpuLevel saved_;
  bool saved_forced_;
};

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLATFORM_CPU_LEVEL_H_
