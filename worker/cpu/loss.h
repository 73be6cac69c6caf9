// Loss kernels on the CPU: softmax + sparse categorical cross-entropy from logits, and mean squared
// error (Keras: mean over the outputs of one example). Both return the SUM of per-example losses
// and write d(loss_scale * sum)/d(predictions).
// Thread-safety: pure functions.
#ifndef PSTRAIN_WORKER_CPU_LOSS_H_
#define PSTRAIN_WORKER_CPU_LOSS_H_

#include <cstdint>

namespace pstrain {

// logits [batch, classes]; labels in [0, classes) (checked by the caller). `dlogits` may be null
// (evaluation). `correct` counts argmax(logits) == label. Returns the summed loss.
double SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int64_t batch, int64_t classes,
                           float loss_scale, float* dlogits, int64_t* correct);

// predictions and targets [batch, outputs]; `dpred` may be null. Returns the summed loss.
double MeanSquaredError(const float* predictions, const float* targets, int64_t batch, int64_t outputs,
                        float loss_scale, float* dpred);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_LOSS_H_
