// The device executor runs a Keras model (ModelSpec::graph) when the graph is a chain of layers it has
// kernels for: the same variables (Keras's names, in graph order) as a layer list of the job spec's
// kind, which PlanModel takes. Anything else is refused, naming the first layer the device cannot run,
// so a job fails when a worker configures it rather than at its first step.
// Thread-safety: a pure function.
#ifndef PSTRAIN_WORKER_CUDA_GRAPH_LOWERING_H_
#define PSTRAIN_WORKER_CUDA_GRAPH_LOWERING_H_

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"

namespace pstrain {

// REQUIRES: model.is_graph(). The model as `layers` (graph cleared), for a chain of InputLayer ->
// Conv2D (square kernel, stride 1, valid or same), MaxPooling2D (square window, stride = window,
// valid), Flatten, Dense on vectors, ReLU (no options) or Activation relu/linear; Conv2D and Dense with
// a relu or linear activation. A softmax at the end of a sparse_categorical_crossentropy model is folded
// into the loss (the device computes it from logits: the same loss but where Keras clips
// probabilities below 1e-7). InvalidArgument naming the layer, its class and what the device runs.
absl::StatusOr<ModelSpec> LowerGraphForDevice(const ModelSpec& model);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CUDA_GRAPH_LOWERING_H_
