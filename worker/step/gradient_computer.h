// GradientComputer: computes a model's loss and gradients for one batch on some device. The CPU
// implementation (worker/cpu) is the reference; the CUDA one (worker/cuda) must agree with it.
// Parameters and gradients are in ModelVariables() order, in host memory: whole dense variables,
// and for an embedding table (a sparse variable) the rows of its SparseLookup::unique_ids,
// [U_i, dim], in that order; its gradient is likewise [U_i, dim], summed per unique id.
//
// Loss scaling (the seeds' contract): gradients are the SUM over the batch of per-example loss
// gradients multiplied by `loss_scale` (the caller passes 1 / global batch), so N workers with B
// examples each, added up, equal one worker with N*B.
// A non-trainable variable (VariableSpec::trainable false: BatchNormalization's moving statistics)
// gets, in its gradient's place, the additive update of its value (new - old, Keras's moving-average
// rule on the batch), scaled likewise; the ps and `pstrain train` add it as is, never through the
// optimizer.
// Thread-safety: one Compute/Evaluate at a time per object; use one object per replica thread.
#ifndef PSTRAIN_WORKER_STEP_GRADIENT_COMPUTER_H_
#define PSTRAIN_WORKER_STEP_GRADIENT_COMPUTER_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/tensor/tensor.h"
#include "worker/step/batch.h"

namespace pstrain {

struct BatchMetrics {
  int64_t examples = 0;
  double loss_sum = 0.0;   // sum of per-example losses (unscaled)
  int64_t correct = 0;     // classification: argmax(logits) == label; binary: (logit > 0) == label
  // Binary (CTR) models: each example's logit and label, in batch order, for AUC.
  std::vector<float> logits, labels;
};

// Adds `part` (the metrics of the next examples in batch order) to `total`.
inline void AddBatchMetrics(const BatchMetrics& part, BatchMetrics* total) {
  total->examples += part.examples;
  total->loss_sum += part.loss_sum;
  total->correct += part.correct;
  total->logits.insert(total->logits.end(), part.logits.begin(), part.logits.end());
  total->labels.insert(total->labels.end(), part.labels.begin(), part.labels.end());
}

class GradientComputer {
 public:
  virtual ~GradientComputer() = default;

  // Forward and backward. `grads` is resized to one tensor per parameter, same shapes.
  // InvalidArgument when parameter count/shapes or the batch shape do not fit the model.
  virtual absl::Status Compute(absl::Span<const Tensor> params, const Batch& batch, float loss_scale,
                               std::vector<Tensor>* grads, BatchMetrics* metrics) = 0;

  // Forward only: loss and accuracy counts.
  virtual absl::Status Evaluate(absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* metrics) = 0;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_STEP_GRADIENT_COMPUTER_H_
