// The CPU level: names, the PSTRAIN_CPU_LEVEL rules (unknown names and levels above the CPU's are
// refused with a message naming the variable), and detection cross-checked with GCC's own cpuid
// code (which also checks that the OS saves the vector registers).
#include "common/platform/cpu_level.h"

#include "gtest/gtest.h"

namespace pstrain {
namespace {

TEST(CpuLevelTest, NamesRoundTrip) {
  for (CpuLevel level : LevelsUpTo(CpuLevel::kAvx512)) {
    auto parsed = ResolveCpuLevel(CpuLevelName(level), CpuLevel::kAvx512);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, level);
  }
  EXPECT_EQ(LevelsUpTo(CpuLevel::kAvx2).size(), 2u);
}

TEST(CpuLevelTest, EmptyMeansTheBestSupported) {
  EXPECT_EQ(*ResolveCpuLevel("", CpuLevel::kAvx2), CpuLevel::kAvx2);
  EXPECT_EQ(*ResolveCpuLevel("", CpuLevel::kBaseline), CpuLevel::kBaseline);
}

TEST(CpuLevelTest, LowerLevelsMayBeForced) {
  EXPECT_EQ(*ResolveCpuLevel("baseline", CpuLevel::kAvx512), CpuLevel::kBaseline);
  EXPECT_EQ(*ResolveCpuLevel("avx2", CpuLevel::kAvx512), CpuLevel::kAvx2);
}

TEST(CpuLevelTest, RefusesALevelAboveTheCpus) {
  auto s = ResolveCpuLevel("avx512", CpuLevel::kAvx2);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("PSTRAIN_CPU_LEVEL=avx512"), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("at most avx2"), std::string::npos) << s.status();
}

TEST(CpuLevelTest, RefusesUnknownNames) {
  auto s = ResolveCpuLevel("sse4", CpuLevel::kAvx512);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("baseline, avx2 or avx512"), std::string::npos) << s.status();
  EXPECT_FALSE(ResolveCpuLevel("AVX2", CpuLevel::kAvx512).ok());
}

TEST(CpuLevelTest, DetectionAgreesWithTheCompilersCpuid) {
  __builtin_cpu_init();
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
                  __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512cd");
  EXPECT_EQ(DetectCpuLevel(), v4 ? CpuLevel::kAvx512 : v3 ? CpuLevel::kAvx2 : CpuLevel::kBaseline);
}

TEST(CpuLevelTest, ConfigureSetsTheActiveLevelAndRefusesWithoutChangingIt) {
  const CpuLevel best = DetectCpuLevel();
  ASSERT_TRUE(ConfigureCpuLevel("baseline").ok());
  EXPECT_EQ(ActiveCpuLevel(), CpuLevel::kBaseline);
  if (best != CpuLevel::kBaseline) {
    EXPECT_NE(DescribeCpuLevel().find("forced by PSTRAIN_CPU_LEVEL"), std::string::npos) << DescribeCpuLevel();
  }
  EXPECT_FALSE(ConfigureCpuLevel("avx1024").ok());
  EXPECT_EQ(ActiveCpuLevel(), CpuLevel::kBaseline);
  ASSERT_TRUE(ConfigureCpuLevel(nullptr).ok());
  EXPECT_EQ(ActiveCpuLevel(), best);
  EXPECT_NE(DescribeCpuLevel().find("the best this CPU has"), std::string::npos) << DescribeCpuLevel();
  {
    ScopedCpuLevelForTest scoped(CpuLevel::kBaseline);
    EXPECT_EQ(ActiveCpuLevel(), CpuLevel::kBaseline);
  }
  EXPECT_EQ(ActiveCpuLevel(), best);
}

}  // namespace
}  // namespace pstrain
