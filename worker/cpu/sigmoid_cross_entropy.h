// Binary cross-entropy from logits on the CPU (Keras BinaryCrossentropy(from_logits=True), TF's
// sigmoid_cross_entropy_with_logits): per example max(z, 0) - z * y + log(1 + exp(-|z|)), which
// never overflows, and its gradient sigmoid(z) - y.
// Thread-safety: pure functions.
#ifndef PSTRAIN_WORKER_CPU_SIGMOID_CROSS_ENTROPY_H_
#define PSTRAIN_WORKER_CPU_SIGMOID_CROSS_ENTROPY_H_

#include <cstdint>

namespace pstrain {

// logits and labels [batch] (labels 0 or 1; any value in [0, 1] works). Writes
// dlogits = loss_scale * (sigmoid(z) - y) unless null; `correct` (unless null) counts
// (z > 0) == (y > 0.5). Returns the SUM of the per-example losses.
double SigmoidCrossEntropy(const float* logits, const float* labels, int64_t batch, float loss_scale, float* dlogits,
                           int64_t* correct);

// 1 / (1 + exp(-z)) without overflow for large |z|.
double Sigmoid(double z);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_SIGMOID_CROSS_ENTROPY_H_
