#include "common/platform/cpu_level.h"

#include <atomic>
#include <cstdint>

#include "absl/strings/str_cat.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace pstrain {
namespace {

// -1 until ConfigureCpuLevel runs: ActiveCpuLevel then falls back to the detected level.
std::atomic<int> configured_level{-1};
std::atomic<bool> configured_forced{false};

#if defined(__x86_64__) || defined(__i386__)
struct CpuidRegs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

CpuidRegs Cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d)) return CpuidRegs{};
  return r;
}

// XCR0: which register state the OS saves on a context switch. Only valid when OSXSAVE is set.
uint64_t ReadXcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

bool Bit(unsigned reg, int bit) { return (reg >> bit) & 1u; }

CpuLevel Probe() {
  const unsigned max_leaf = Cpuid(0, 0).a;
  const CpuidRegs l1 = Cpuid(1, 0);
  if (!Bit(l1.c, 27)) return CpuLevel::kBaseline;  // OSXSAVE: no xgetbv, so no AVX state
  const uint64_t xcr0 = ReadXcr0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;              // SSE + AVX state
  const bool os_zmm = os_ymm && (xcr0 & 0xe0) == 0xe0;  // + opmask, ZMM_Hi256, Hi16_ZMM
  const CpuidRegs l7 = max_leaf >= 7 ? Cpuid(7, 0) : CpuidRegs{};
  const CpuidRegs ext = Cpuid(0x80000001, 0);
  // x86-64-v3: AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE (what -march=x86-64-v3 may emit).
  const bool v3 = os_ymm && Bit(l1.c, 28) && Bit(l1.c, 12) && Bit(l1.c, 29) && Bit(l1.c, 22) && Bit(l7.b, 5) &&
                  Bit(l7.b, 3) && Bit(l7.b, 8) && Bit(ext.c, 5);
  if (!v3) return CpuLevel::kBaseline;
  // x86-64-v4: AVX-512 F, DQ, CD, BW, VL.
  const bool v4 = os_zmm && Bit(l7.b, 16) && Bit(l7.b, 17) && Bit(l7.b, 28) && Bit(l7.b, 30) && Bit(l7.b, 31);
  return v4 ? CpuLevel::kAvx512 : CpuLevel::kAvx2;
}
#else
CpuLevel Probe() { return CpuLevel::kBaseline; }
#endif

const char* Features(CpuLevel level) {
  switch (level) {
    case CpuLevel::kAvx512:
      return "16 floats per vector, FMA";
    case CpuLevel::kAvx2:
      return "8 floats per vector, FMA";
    case CpuLevel::kBaseline:
      break;
  }
  return "4 floats per vector, SSE2";
}

void SetLevel(CpuLevel level, bool forced) {
  configured_forced.store(forced);
  configured_level.store(static_cast<int>(level));
}

}  // namespace

const char* CpuLevelName(CpuLevel level) {
  switch (level) {
    case CpuLevel::kAvx512:
      return "avx512";
    case CpuLevel::kAvx2:
      return "avx2";
    case CpuLevel::kBaseline:
      break;
  }
  return "baseline";
}

std::vector<CpuLevel> LevelsUpTo(CpuLevel top) {
  std::vector<CpuLevel> out;
  for (int l = 0; l <= static_cast<int>(top); ++l) out.push_back(static_cast<CpuLevel>(l));
  return out;
}

CpuLevel DetectCpuLevel() {
  static const CpuLevel detected = Probe();
  return detected;
}

absl::StatusOr<CpuLevel> ResolveCpuLevel(absl::string_view requested, CpuLevel supported) {
  if (requested.empty()) return supported;
  for (CpuLevel level : LevelsUpTo(CpuLevel::kAvx512)) {
    if (requested != CpuLevelName(level)) continue;
    if (level > supported) {
      return absl::InvalidArgumentError(absl::StrCat(kCpuLevelEnv, "=", requested, " asks for ", requested,
                                                     " kernels, but this CPU (or its OS) supports at most ",
                                                     CpuLevelName(supported), ": unset it or pick a lower level"));
    }
    return level;
  }
  return absl::InvalidArgumentError(absl::StrCat(kCpuLevelEnv, "=\"", requested,
                                                 "\" is not a CPU level: use baseline, avx2 or avx512 (or unset it "
                                                 "for the best this CPU has)"));
}

absl::StatusOr<CpuLevel> ConfigureCpuLevel(const char* requested) {
  const absl::string_view value = requested == nullptr ? absl::string_view() : absl::string_view(requested);
  absl::StatusOr<CpuLevel> level = ResolveCpuLevel(value, DetectCpuLevel());
  if (level.ok()) SetLevel(*level, !value.empty());
  return level;
}

CpuLevel ActiveCpuLevel() {
  const int level = configured_level.load(std::memory_order_relaxed);
  return level < 0 ? DetectCpuLevel() : static_cast<CpuLevel>(level);
}

std::string DescribeCpuLevel() {
  const CpuLevel level = ActiveCpuLevel(), best = DetectCpuLevel();
  std::string out = absl::StrCat(CpuLevelName(level), " (", Features(level), "; ");
  if (configured_forced.load() && level != best) {
    absl::StrAppend(&out, "forced by ", kCpuLevelEnv, ", this CPU has ", CpuLevelName(best), ")");
  } else {
    absl::StrAppend(&out, "the best this CPU has)");
  }
  return out;
}

ScopedCpuLevelForTest::ScopedCpuLevelForTest(CpuLevel level)
    : saved_(ActiveCpuLevel()), saved_forced_(configured_forced.load()) {
  SetLevel(level, true);
}

ScopedCpuLevelForTest::~ScopedCpuLevelForTest() { SetLevel(saved_, saved_forced_); }

}  // namespace pstrain
