// The dense optimizer loops for one CPU level (optimizer_kernels.h). Whole vectors first, then the
// remainder element by element with the same expressions; compiled with -ffp-contract=off, so
// vector and scalar code round alike and every level gives the same bits.
#include "common/platform/simd.h"
#include "ps/store/optimizer_kernels.h"

namespace pstrain {
namespace PSTRAIN_ISA_NS {
namespace {

void Sgd(float* w, const float* g, float lr, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(w + i, Load(w + i) - lr * Load(g + i));
  for (; i < n; ++i) w[i] -= lr * g[i];
}

void SgdMomentum(float* w, float* m, const float* g, float lr, float mu, bool nesterov, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Vec gv = Load(g + i), mv = mu * Load(m + i) - lr * gv;
    Store(m + i, mv);
    Store(w + i, Load(w + i) + (nesterov ? mu * mv - lr * gv : mv));
  }
  for (; i < n; ++i) {
    m[i] = mu * m[i] - lr * g[i];
    w[i] += nesterov ? mu * m[i] - lr * g[i] : m[i];
  }
}

void Adagrad(float* w, float* a, const float* g, float lr, float eps, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Vec gv = Load(g + i), av = Load(a + i) + gv * gv;
    Store(a + i, av);
    Store(w + i, Load(w + i) - lr * gv / Sqrt(av + eps));
  }
  for (; i < n; ++i) {
    a[i] += g[i] * g[i];
    w[i] -= lr * g[i] / __builtin_sqrtf(a[i] + eps);
  }
}

void Adam(float* w, float* m, float* v, const float* g, float alpha, float one_minus_b1, float one_minus_b2, float eps,
          int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Vec gv = Load(g + i);
    Vec mv = Load(m + i), vv = Load(v + i);
    mv += (gv - mv) * one_minus_b1;
    vv += (gv * gv - vv) * one_minus_b2;
    Store(m + i, mv);
    Store(v + i, vv);
    Store(w + i, Load(w + i) - alpha * mv / (Sqrt(vv) + eps));
  }
  for (; i < n; ++i) {
    m[i] += (g[i] - m[i]) * one_minus_b1;
    v[i] += (g[i] * g[i] - v[i]) * one_minus_b2;
    w[i] -= alpha * m[i] / (__builtin_sqrtf(v[i]) + eps);
  }
}

void RmsProp(float* w, float* vel, float* mom, float* avg, const float* g, float lr, float rho, float eps, float mu,
             int64_t n) {
  const float keep = 1 - rho;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Vec gv = Load(g + i), velv = rho * Load(vel + i) + keep * gv * gv;
    Store(vel + i, velv);
    Vec den = velv + eps;
    if (avg != nullptr) {
      const Vec avgv = rho * Load(avg + i) + keep * gv;
      Store(avg + i, avgv);
      den = velv - avgv * avgv + eps;
    }
    const Vec inc = lr * gv / Sqrt(den);
    if (mom != nullptr) {
      const Vec momv = mu * Load(mom + i) + inc;
      Store(mom + i, momv);
      Store(w + i, Load(w + i) - momv);
    } else {
      Store(w + i, Load(w + i) - inc);
    }
  }
  for (; i < n; ++i) {
    vel[i] = rho * vel[i] + keep * g[i] * g[i];
    float den = vel[i] + eps;
    if (avg != nullptr) {
      avg[i] = rho * avg[i] + keep * g[i];
      den = vel[i] - avg[i] * avg[i] + eps;
    }
    const float inc = lr * g[i] / __builtin_sqrtf(den);
    if (mom != nullptr) {
      mom[i] = mu * mom[i] + inc;
      w[i] -= mom[i];
    } else {
      w[i] -= inc;
    }
  }
}

}  // namespace

const OptimizerKernels& OptimizerTable() {
  static constexpr OptimizerKernels kTable = {
      Sgd,          //
      SgdMomentum,  //
      Adagrad,      //
      Adam,         //
      RmsProp,      //
  };
  return kTable;
}

}  // namespace PSTRAIN_ISA_NS
}  // namespace pstrain
