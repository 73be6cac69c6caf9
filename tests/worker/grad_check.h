// Finite-difference helpers for the kernel and model gradient tests.
// Thread-safety: plain functions.
#ifndef PSTRAIN_TESTS_WORKER_GRAD_CHECK_H_
#define PSTRAIN_TESTS_WORKER_GRAD_CHECK_H_

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
  for (size_t i = 0; i < values->size(); i += stride) {
    const float saved = (*values)[i];
    (*values)[i] = saved + eps;
    const double up = loss();
    (*values)[i] = saved - eps;
    const double down = loss();
    (*values)[i] = saved;
    const double numeric = (up - down) / (2.0 * eps);
    const double tol = 3e-3 + 2e-2 * std::fabs(numeric);
    if (std::fabs(numeric - analytic[i]) > tol && ++bad <= 5) {
      ADD_FAILURE() << what << "[" << i << "]: analytic " << analytic[i] << " vs numeric " << numeric;
    }
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

#endif  // PSTRAIN_TESTS_WORKER_GRAD_CHECK_H_
