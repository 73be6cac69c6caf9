// Finite-difference helpers for the kernel and model gradient tests.
// Thread-safety: plain functions.
#ifndef PSTRAIN_TESTS_WORKER_CPU_GRAD_CHECK_H_
#define PSTRAIN_TESTS_WORKER_CPU_GRAD_CHECK_H_

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace pstrain {

inline std::vector<float> RandomVector(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Compares analytic[i] with the central difference of `loss` when (*values)[i] moves by +-eps.
// Checks every element (or `max_checks` spread over the vector).
inline void ExpectGradientMatches(const std::string& what, std::vector<float>* values,
                                  const std::vector<float>& analytic, const std::function<double()>& loss,
                                  float eps = 1e-3f, size_t max_checks = 400) {
  ASSERT_EQ(values->size(), analytic.size()) << what;
  const size_t stride = std::max<size_t>(1, values->size() / max_checks);
  int bad = 0;
  auto numeric_at = [&](size_t i, float step) {
    const float saved = (*values)[i];
    (*values)[i] = saved + step;
    const double up = loss();
    (*values)[i] = saved - step;
    const double down = loss();
    (*values)[i] = saved;
    return (up - down) / (2.0 * step);
  };
  auto close = [&](double numeric, double analytic) {
    return std::fabs(numeric - analytic) <= 3e-3 + 2e-2 * std::fabs(numeric);
  };
  for (size_t i = 0; i < values->size(); i += stride) {
    const double numeric = numeric_at(i, eps);
    // A ReLU or max-pool kink inside +-eps breaks the difference; a second, smaller step rarely
    // meets one too, while a wrong gradient fails both.
    if (close(numeric, analytic[i]) || close(numeric_at(i, eps / 4), analytic[i])) continue;
    if (++bad <= 5) ADD_FAILURE() << what << "[" << i << "]: analytic " << analytic[i] << " vs numeric " << numeric;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " mismatches";
}

// sum(out * weights) in double: a loss whose gradient with respect to `out` is `weights`.
inline double WeightedSum(const std::vector<float>& out, const std::vector<float>& weights) {
  double s = 0.0;
  for (size_t i = 0; i < out.size(); ++i) s += static_cast<double>(out[i]) * weights[i];
  return s;
}

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_WORKER_CPU_GRAD_CHECK_H_
