// The dense optimizer loops (optimizer.h's formulas over a whole shard), one table per CPU level
// (common/platform/cpu_level.h) compiled from isa/optimizer_loops.cc. They are compiled without FMA
// contraction, so every level computes exactly the scalar formulas: a shard's values do not
// depend on which CPU the ps runs on. Adding a loop: a field here, its body in
// isa/optimizer_loops.cc, one line in that file's table.
// Thread-safety: pure functions of their arguments.
#ifndef PSTRAIN_PS_STORE_OPTIMIZER_KERNELS_H_
#define PSTRAIN_PS_STORE_OPTIMIZER_KERNELS_H_

#include <cstdint>

namespace pstrain {

enum class CpuLevel;  // common/platform/cpu_level.h

// All arrays hold n floats and do not overlap; slots that a configuration lacks are null.
struct OptimizerKernels {
  // w -= lr * g
  void (*sgd)(float* w, const float* g, float lr, int64_t n);
  // m = mu * m - lr * g; w += nesterov ? mu * m - lr * g : m
  void (*sgd_momentum)(float* w, float* m, const float* g, float lr, float mu, bool nesterov, int64_t n);
  // a += g * g; w -= lr * g / sqrt(a + eps)
  void (*adagrad)(float* w, float* a, const float* g, float lr, float eps, int64_t n);
  // m += (g - m) * one_minus_b1; v += (g * g - v) * one_minus_b2; w -= alpha * m / (sqrt(v) + eps)
  void (*adam)(float* w, float* m, float* v, const float* g, float alpha, float one_minus_b1, float one_minus_b2,
               float eps, int64_t n);
  // vel = rho * vel + (1 - rho) * g * g; den = vel + eps, or with avg (centered):
  // avg = rho * avg + (1 - rho) * g, den = vel - avg * avg + eps; inc = lr * g / sqrt(den);
  // with mom: mom = mu * mom + inc, w -= mom; else w -= inc
  void (*rmsprop)(float* w, float* vel, float* mom, float* avg, const float* g, float lr, float rho, float eps,
                  float mu, int64_t n);
};

// The table for `level`. REQUIRES: level <= DetectCpuLevel() to call its loops.
const OptimizerKernels& OptimizerKernelsFor(CpuLevel level);
// The table for ActiveCpuLevel().
const OptimizerKernels& ActiveOptimizerKernels();

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_OPTIMIZER_KERNELS_H_
