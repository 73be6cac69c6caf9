#include "worker/cpu/sigmoid_cross_entropy.h"

#include <algorithm>
#include <cmath>

namespace pstrain {

double Sigmoid(double z) {
  if (z >= 0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

double SigmoidCrossEntropy(const float* logits, const float* labels, int64_t batch, float loss_scale, float* dlogits,
                           int64_t* correct) {
  double total = 0.0;
  int64_t right = 0;
  for (int64_t i = 0; i < batch; ++i) {
    const double z = logits[i], y = labels[i];
    total += std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::fabs(z)));
    right += (z > 0) == (y > 0.5) ? 1 : 0;
    if (dlogits != nullptr) dlogits[i] = static_cast<float>((Sigmoid(z) - y) * loss_scale);
  }
  if (correct != nullptr) *correct = right;
  return total;
}

}  // namespace pstrain
