// The FMA loop of the peak measurement (fma_peak.h), compiled once per CPU level.
#include "common/platform/simd.h"

namespace pstrain {
namespace PSTRAIN_ISA_NS {

// 12 independent chains of acc = acc * b + c: more than FMA latency x FMA pipes on current cores,
// so the pipes, not the latency, set the pace. The empty asm keeps every chain in a register and
// stops the compiler from folding the loop. Returns the FLOPs done (an FMA is 2 per lane).
double FmaChains(int64_t iterations, float* sink) {
  constexpr int kChains = 12;
  // Named variables, not an array: the asm then pins each chain in a register (an array would live
  // in memory and the loop would measure loads and stores).
  Vec a0 = Splat(1), a1 = Splat(2), a2 = Splat(3), a3 = Splat(4), a4 = Splat(5), a5 = Splat(6), a6 = Splat(7),
      a7 = Splat(8), a8 = Splat(9), a9 = Splat(10), a10 = Splat(11), a11 = Splat(12);
  const Vec b = Splat(0.999999f), c = Splat(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
    a0 = a0 * b + c;
    a1 = a1 * b + c;
    a2 = a2 * b + c;
    a3 = a3 * b + c;
    a4 = a4 * b + c;
    a5 = a5 * b + c;
    a6 = a6 * b + c;
    a7 = a7 * b + c;
    a8 = a8 * b + c;
    a9 = a9 * b + c;
    a10 = a10 * b + c;
    a11 = a11 * b + c;
    __asm__ volatile(""
                     : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7), "+v"(a8),
                       "+v"(a9), "+v"(a10), "+v"(a11));
  }
  const Vec sum = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));
  *sink = sum[0];
  return static_cast<double>(iterations) * kChains * kLanes * 2.0;
}

}  // namespace PSTRAIN_ISA_NS
}  // namespace pstrain
