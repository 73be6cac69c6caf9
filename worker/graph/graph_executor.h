// Runs a ModelGraph on the CPU: forward over the layers in topological order, backward in reverse,
// adding every trainable variable's gradient. Variables are named (Keras's names) and passed in on
// each call, never owned, so they can be pulled from ps shards; the moving statistics of
// BatchNormalization come back as separate non-trainable updates (MovingUpdates) for the caller to
// apply (or push).
//
// Float for training, double for gradient checks: GraphExecutor<float>, GraphExecutor<double>.
// Thread-safety: one call at a time per object (the layers keep their forward state); use one
// executor per thread.
#ifndef PSTRAIN_WORKER_GRAPH_GRAPH_EXECUTOR_H_
#define PSTRAIN_WORKER_GRAPH_GRAPH_EXECUTOR_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/graph/model_graph.h"
#include "worker/graph/array.h"
#include "worker/graph/graph_layer.h"

namespace pstrain {

template <typename T>
class GraphExecutor {
 public:
  // REQUIRES: `graph` from ReadKerasModelJson (validated). Copies it.
  explicit GraphExecutor(const ModelGraph& graph);

  const ModelGraph& graph() const { return graph_; }

  // Computes the output. `inputs`: one per model input in graph().inputs order, each
  // [batch] + the input's shape, one batch size. `variables`: every variable of the graph by name
  // with its shape (extra entries are ignored); they must stay alive and unchanged until Backward.
  // InvalidArgument naming the input or variable that is missing or misshapen, or a bad value
  // (an Embedding id out of range). The output is valid until the next Forward.
  absl::StatusOr<const Array<T>*> Forward(const std::vector<Array<T>>& inputs, const NamedArrays<T>& variables,
                                          const ForwardOptions& options);
  // The same, taking the inputs' values without a copy: each input's data is swapped with storage of
  // an earlier call, which the caller may fill again (its shape and contents are unspecified).
  absl::StatusOr<const Array<T>*> Forward(std::vector<Array<T>>* inputs, const NamedArrays<T>& variables,
                                          const ForwardOptions& options);

  // REQUIRES: a successful Forward just before (FailedPrecondition otherwise, also for a second
  // Backward after one Forward). `doutput` is the loss's gradient with respect to
  // the output. Writes each trainable variable's gradient to (*gradients)[name] (created or
  // resized; what it held is replaced, its storage reused). InvalidArgument when doutput's shape
  // is not the output's.
  absl::Status Backward(const Array<T>& doutput, NamedArrays<T>* gradients);

  // After a training Forward: the new values of the non-trainable variables (BatchNormalization's
  // moving mean and variance) by name. Empty after an inference Forward.
  NamedArrays<T> MovingUpdates() const;

 private:
  ModelGraph graph_;
  std::vector<std::unique_ptr<GraphLayer<T>>> layers_;
  std::vector<std::vector<int>> layer_variables_;  // per layer: indices into graph_.variables
  std::vector<Array<T>> values_;                   // per layer: its output of the last Forward
  std::vector<std::vector<const Array<T>*>> weights_;  // per layer: its variables of the last Forward
  std::vector<Array<T>> grads_;                        // per layer: its output's gradient (Backward's scratch)
  // Per layer: it PassesThrough and is its input's only consumer, and that input is neither a model
  // input nor the output, nor is it: Forward moves the input's values to it (Backward moves them back, and
  // its gradient to the input), so no copy is made.
  std::vector<bool> moves_;
  std::vector<int> consumers_;    // per layer: how many layer inputs it is
  std::vector<Array<T>> scratch_;  // input gradients of a layer that writes them, to add
  bool forward_done_ = false;
  bool backward_ready_ = false;  // a successful Forward and no Backward since
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_GRAPH_GRAPH_EXECUTOR_H_
