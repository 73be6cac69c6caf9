#include "worker/cpu/loss.h"

#include <cmath>

namespace pstrain {

double SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int64_t batch, int64_t classes,
                           float loss_scale, float* dlogits, int64_t* correct) {
  double total = 0.0;
  int64_t right = 0;
  for (int64_t n = 0; n < batch; ++n) {
    const float* z = logits + n * classes;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) best = z[c] > z[best] ? c : best;
    const float zmax = z[best];
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c] - zmax));
    const double log_sum = std::log(sum);
    total += log_sum - (z[labels[n]] - zmax);
    right += best == labels[n] ? 1 : 0;
    if (dlogits == nullptr) continue;
    float* d = dlogits + n * classes;
    for (int64_t c = 0; c < classes; ++c) {
      const double p = std::exp(static_cast<double>(z[c] - zmax) - log_sum);
      d[c] = static_cast<float>((p - (c == labels[n] ? 1.0 : 0.0)) * loss_scale);
    }
  }
  if (correct != nullptr) *correct = right;
  return total;
}

double MeanSquaredError(const float* predictions, const float* targets, int64_t batch, int64_t outputs,
                        float loss_scale, float* dpred) {
  double total = 0.0;
  const float grad_scale = 2.0f * loss_scale / static_cast<float>(outputs);
  for (int64_t i = 0; i < batch * outputs; ++i) {
    const float diff = predictions[i] - targets[i];
    total += static_cast<double>(diff) * diff;
    if (dpred != nullptr) dpred[i] = grad_scale * diff;
  }
  return total / static_cast<double>(outputs);
}

}  // namespace pstrain
