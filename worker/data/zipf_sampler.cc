#include "worker/data/zipf_sampler.h"

#include <algorithm>
#include <cmath>

namespace pstrain {
namespace {

// log1p(x) / x and expm1(x) / x, with their limits (1) near 0, so exponent 1 needs no special case.
double Log1pOverX(double x) {
  return std::abs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}
double Expm1OverX(double x) {
  return std::abs(x) > 1e-8 ? std::expm1(x) / x : 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
}

// Rejections are rare (the squeeze accepts most draws at once); the bound only guarantees an end.
constexpr int kMaxTries = 1000;

}  // namespace

ZipfSampler::ZipfSampler(int64_t n, double exponent) : n_(n), exponent_(exponent) {
  integral_x1_ = Integral(1.5) - 1.0;
  integral_n_ = Integral(static_cast<double>(n) + 0.5);
  squeeze_ = 2.0 - IntegralInverse(Integral(2.5) - Density(2.0));
}

double ZipfSampler::Density(double x) const { return std::exp(-exponent_ * std::log(x)); }

// (x^(1 - s) - 1) / (1 - s), and log(x) when s = 1.
double ZipfSampler::Integral(double x) const {
  const double log_x = std::log(x);
  return Expm1OverX((1.0 - exponent_) * log_x) * log_x;
}

double ZipfSampler::IntegralInverse(double y) const {
  double t = y * (1.0 - exponent_);
  if (t < -1.0) t = -1.0;  // rounding near the lower end
  return std::exp(Log1pOverX(t) * y);
}

int64_t ZipfSampler::Sample(RandomStream& random) const {
  int64_t k = 1;
  for (int tries = 0; tries < kMaxTries; ++tries) {
    // y uniform over (integral_x1_, integral_n_]; x its preimage; k the integer nearest to x.
    const double y = integral_n_ + random.Uniform() * (integral_x1_ - integral_n_);
    const double x = IntegralInverse(y);
    k = static_cast<int64_t>(std::clamp(x + 0.5, 1.0, static_cast<double>(n_)));
    if (static_cast<double>(k) - x <= squeeze_ ||
        y >= Integral(static_cast<double>(k) + 0.5) - Density(static_cast<double>(k))) {
      break;
    }
  }
  return k - 1;
}

}  // namespace pstrain
