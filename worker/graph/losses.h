// Keras's losses on a model's output, with the gradient the executor's backward pass starts from.
// Each is Keras's per-example loss reduced by "sum over batch size" (the mean over the batch, and
// over every axis but the last for outputs with more than one):
//   sparse_categorical_crossentropy  labels: class ids, one per output row
//   categorical_crossentropy         labels: shaped like the output (one-hot or soft)
//   binary_crossentropy              labels: shaped like the output, in [0, 1]; mean over the last axis
//   mean_squared_error               labels: shaped like the output; mean over the last axis
// from_logits: the output is logits (softmax / sigmoid applied here); otherwise probabilities,
// clipped to [1e-7, 1 - 1e-7] as Keras does (and, for the categorical losses, divided by their sum).
// Thread-safety: plain functions.
#ifndef PSTRAIN_WORKER_GRAPH_LOSSES_H_
#define PSTRAIN_WORKER_GRAPH_LOSSES_H_

#include <string>

#include "absl/status/statusor.h"
#include "worker/graph/array.h"

namespace pstrain {

enum class LossKind { kSparseCategoricalCrossentropy, kCategoricalCrossentropy, kBinaryCrossentropy, kMeanSquaredError };

struct LossSpec {
  LossKind kind = LossKind::kSparseCategoricalCrossentropy;
  bool from_logits = false;
};

// Keras's names (and "mse"). InvalidArgument listing the supported ones.
absl::StatusOr<LossSpec> ParseLoss(const std::string& name, bool from_logits);

// The mean loss over the batch; writes its gradient with respect to `output` into `doutput`
// (resized). InvalidArgument for labels that do not fit the output (shape, class id range).
template <typename T>
absl::StatusOr<double> ComputeLoss(const LossSpec& loss, const Array<T>& output, const Array<T>& labels,
                                   Array<T>* doutput);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_GRAPH_LOSSES_H_
