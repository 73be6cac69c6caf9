// Draws ranks 0..n-1 with P(rank r) proportional to (r + 1)^-exponent (Zipf's law, as the ids of
// CTR data roughly follow), in O(1) time and memory per draw whatever n, by Hormann and
// Derflinger's rejection-inversion method ("Rejection-inversion to generate variates from monotone
// discrete distributions", 1996).
// Thread-safety: immutable after construction; Sample may run on many threads with their own
// streams.
#ifndef PSTRAIN_WORKER_DATA_ZIPF_SAMPLER_H_
#define PSTRAIN_WORKER_DATA_ZIPF_SAMPLER_H_

#include <cstdint>

#include "worker/data/random_stream.h"

namespace pstrain {

class ZipfSampler {
 public:
  // REQUIRES: n >= 1, exponent > 0.
  ZipfSampler(int64_t n, double exponent);

  int64_t n() const { return n_; }
  double exponent() const { return exponent_; }
  // A rank in [0, n).
  int64_t Sample(RandomStream& random) const;

 private:
  double Density(double x) const;          // x^-exponent
  double Integral(double x) const;         // an antiderivative of Density
  double IntegralInverse(double y) const;  // its inverse

  int64_t n_;
  double exponent_;
  double integral_x1_;  // Integral(1.5) - 1
  double integral_n_;   // Integral(n + 0.5)
  double squeeze_;      // accept at once when k - x <= squeeze_
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_ZIPF_SAMPLER_H_
