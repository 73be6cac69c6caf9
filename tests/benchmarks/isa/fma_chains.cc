// The FMA loop of the peak measurement (fma_peak.h), compiled once per CPU level.
#include "common/simd.h"

namespace pstrain {
namespace PSTRAIN_ISA_NS {

// 12 independent chains of acc = acc * b + c: more than FMA latency x FMA pipes on current cores,
// so the pipes, not the latency, set the pace. The empty asm keeps every chain in a register and
// stops the compiler from folding the loop. Returns the FLOPs done (an FMA is 2 per lane).
double FmaChains(int64_t iterations, float* sink) {
  constexpr int kChains = 12;
  Vec acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = Splat(static_cast<float>(i + 1));
  const Vec b = Splat(0.999999f), c = Splat(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) {
      acc[i] = acc[i] * b + c;
      __asm__ volatile("" : "+v"(acc[i]));
    }
  }
  Vec sum = {};
  for (int i = 0; i < kChains; ++i) sum += acc[i];
  *sink = sum[0];
  return static_cast<double>(iterations) * kChains * kLanes * 2.0;
}

}  // namespace PSTRAIN_ISA_NS
}  // namespace pstrain
