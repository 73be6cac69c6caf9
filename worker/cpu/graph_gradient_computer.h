// The CPU GradientComputer of a Keras model (ModelSpec::graph): one GraphExecutor per thread, each
// running a contiguous chunk of the batch, their gradients summed. Parameters are the graph's
// trainable variables in ModelVariables() order. Loss scaling as GradientComputer says: the
// executor's loss is the chunk's mean, so its output gradient is scaled by chunk size * loss_scale.
// Metrics: sparse_categorical_crossentropy counts argmax == label; binary_crossentropy counts
// (output past 0, or 0.5 for probabilities) == label and reports each example's logit for AUC.
// Non-trainable variables (BatchNormalization's moving statistics) get no gradient but their
// additive update: (new moving value - moving value) of each thread's chunk, times its examples *
// loss_scale (each chunk normalises with its own statistics, so with several threads the batch
// variance is the mean of the chunks' variances).
// Dropout draws its masks from the chunk's first example index and a count of calls.
// A model with id inputs (model.is_ctr()) takes CTR batches: its float inputs get columns of
// batch.inputs, its integer inputs columns of batch.positions, and each Embedding table comes as
// the rows of the step's unique ids ([U, dim], GradientComputer's sparse contract), its gradient
// likewise. A bag field (EmbeddingFieldSpec::combiner, a multi-hot feature) feeds its column of
// its input's Embedding layers the batch's bag (Batch::bags, bag_positions) instead of one id per
// example: there each outputs the bag's rows combined by the combiner's coefficients
// (BagCoefficients), and its gradient rows get the coefficients times the output's gradient.
// Thread-safety: one Compute/Evaluate at a time per object (GradientComputer's rule).
#ifndef PSTRAIN_WORKER_CPU_GRAPH_GRADIENT_COMPUTER_H_
#define PSTRAIN_WORKER_CPU_GRAPH_GRADIENT_COMPUTER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "worker/step/gradient_computer.h"

namespace pstrain {

// REQUIRES: model.is_graph(). InvalidArgument for threads < 1 or a loss the executor lacks.
absl::StatusOr<std::unique_ptr<GradientComputer>> NewGraphGradientComputer(const ModelSpec& model, int threads);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_GRAPH_GRADIENT_COMPUTER_H_
