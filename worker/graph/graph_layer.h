// One layer of a graph executor: forward and backward on the CPU for one GraphLayerSpec (model_graph.h),
// in float or double. Weights are passed in, never owned: a layer's weights are its variables in
// ModelGraph::variables order (Dense: kernel, then bias when use_bias), so they can come from ps
// shards. A layer keeps what its backward pass needs from the last forward call (activations,
// normalised values, masks, argmaxes).
// Thread-safety: one call at a time per object; Backward follows the Forward it differentiates.
#ifndef PSTRAIN_WORKER_GRAPH_GRAPH_LAYER_H_
#define PSTRAIN_WORKER_GRAPH_GRAPH_LAYER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/graph/model_graph.h"
#include "worker/graph/array.h"

namespace pstrain {

// The bag (multi-hot ids) one column of an Embedding layer's input holds instead of one id per
// example: example b of the call combines the rows positions[i] with coefficients coef[i] (the
// combiner's weights, embedding_kernels.h BagCoefficients) for i in offsets[b] .. offsets[b + 1],
// absolute indices into positions and coef. offsets == nullptr: the column is one id per example,
// looked up as usual.
struct EmbeddingBags {
  const int64_t* offsets = nullptr;  // batch + 1 entries, or null
  const int32_t* positions = nullptr;
  const float* coef = nullptr;
};

struct ForwardOptions {
  bool training = false;  // Dropout drops, BatchNormalization uses the batch's statistics
  uint64_t seed = 0;      // with `step`: Dropout's masks, reproducible
  int64_t step = 0;
  // By Embedding layer name: one entry per column of the layer's input (an input of shape (k,)
  // has k), for the layers whose input holds a bag feature (a tfrecord job's multi-hot ids) in at
  // least one column; null or absent for the others. The output stays [batch, k, dim]: a bag's
  // column holds its combined row (an empty bag: zeros). Must stay alive until Backward.
  const std::map<std::string, std::vector<EmbeddingBags>>* bags = nullptr;
};

template <typename T>
class GraphLayer {
 public:
  using Arrays = std::vector<const Array<T>*>;
  virtual ~GraphLayer() = default;

  // Writes `out` (resized) from `in` (the layer's inputs, in call order, shapes as the graph says
  // with one batch size) and `weights`. InvalidArgument for bad values (an id outside an
  // Embedding's table).
  virtual absl::Status Forward(const Arrays& in, const Arrays& weights, const ForwardOptions& options,
                               Array<T>* out) = 0;

  // REQUIRES: follows Forward with the same `in`, `weights` and its `out`. Adds the gradients of
  // the inputs to din[i] (skipped where null; each sized like its input) and of the weights to
  // dweights[i] (skipped where null; each sized like its weight), or writes them when
  // WritesGradients().
  virtual void Backward(const Arrays& in, const Arrays& weights, const Array<T>& out, const Array<T>& dout,
                        const std::vector<Array<T>*>& din, const std::vector<Array<T>*>& dweights) = 0;

  // Backward on an output gradient the caller no longer needs (the executor's own): a layer may
  // overwrite its elements (a kernel that masks it in place then needs no copy). By default Backward.
  virtual void BackwardOnOwnGradient(const Arrays& in, const Arrays& weights, const Array<T>& out, Array<T>* dout,
                                     const std::vector<Array<T>*>& din, const std::vector<Array<T>*>& dweights) {
    Backward(in, weights, out, *dout, din, dweights);
  }

  // After Forward: true when Backward writes din and dweights instead of adding to them (a kernel
  // that writes its results; the executor then skips zero-filling them).
  virtual bool WritesGradients() const { return false; }

  // True when the output is the one input's values with the shape [batch] + the spec's
  // output_shape, and the input's gradient is the output's (Flatten, Reshape): the executor may
  // then move the values instead of calling Forward and Backward.
  virtual bool PassesThrough() const { return false; }

  // After a training Forward: new values of the non-trainable weights (BatchNormalization's moving
  // mean and variance, Keras's rule moving = moving * momentum + batch * (1 - momentum)), as
  // (weight index, value) pairs. Empty for other layers.
  virtual std::vector<std::pair<int, Array<T>>> MovingUpdates(const Arrays& weights) const { return {}; }
};

// The layer for graph.layers[index] (REQUIRES: a graph from ReadKerasModelJson; every kind has one).
template <typename T>
std::unique_ptr<GraphLayer<T>> MakeGraphLayer(const ModelGraph& graph, int index);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_GRAPH_GRAPH_LAYER_H_
