// Helpers for tests that run once per CPU level (common/platform/cpu_level.h): the levels, a readable test
// name per level, and a skip naming the level when this CPU lacks it.
// Thread-safety: plain functions.
#ifndef PSTRAIN_TESTS_WORKER_CPU_CPU_LEVELS_H_
#define PSTRAIN_TESTS_WORKER_CPU_CPU_LEVELS_H_

#include <string>
#include <vector>

#include "common/platform/cpu_level.h"
#include "gtest/gtest.h"

namespace pstrain {

inline std::vector<CpuLevel> AllCpuLevels() { return LevelsUpTo(CpuLevel::kAvx512); }

inline std::string CpuLevelTestName(const ::testing::TestParamInfo<CpuLevel>& info) { return CpuLevelName(info.param); }

// In a TEST_P over levels: skips (with a message naming the level) when the CPU cannot run it.
#define PSTRAIN_SKIP_UNSUPPORTED_LEVEL(level)                                                            \
  do {                                                                                                   \
    if ((level) > ::pstrain::DetectCpuLevel()) {                                                         \
      GTEST_SKIP() << "CPU level " << ::pstrain::CpuLevelName(level) << " is not supported by this CPU " \
                   << "(it has " << ::pstrain::CpuLevelName(::pstrain::DetectCpuLevel()) << ")";         \
    }                                                                                                    \
  } while (0)

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_WORKER_CPU_CPU_LEVELS_H_
