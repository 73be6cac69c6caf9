// A model as a validated DAG of layers, read from a Keras `to_json()` (keras_json.h): what every task
// needs to know about a model without computing it. The chief plans its variables (names are Keras's:
// `dense/kernel`, `embedding/embeddings`, `batch_normalization/moving_mean`), the worker builds an
// executor over it (worker/graph/graph_executor.h).
//
// Invariants of a ModelGraph that ReadKerasModelJson returns: `layers` is in topological order
// (every layer's inputs come before it), every layer is called exactly once, inputs are the
// InputLayers in the model's input order, `output` is the one output layer, every shape is known
// (per example, without the batch dimension), and every config value is one the executor supports.
// Thread-safety: plain values.
#ifndef PSTRAIN_COMMON_GRAPH_MODEL_GRAPH_H_
#define PSTRAIN_COMMON_GRAPH_MODEL_GRAPH_H_

#include <cstdint>
#include <string>
#include <map>
#include <vector>

#include "common/config/initializer_spec.h"

namespace pstrain {

enum class LayerKind {
  kInput, kDense, kActivation, kReLU, kFlatten, kReshape, kDropout,
  kConcatenate, kAdd, kSubtract, kMultiply, kAverage, kDot,
  kEmbedding, kLayerNormalization, kBatchNormalization,
  kGlobalAveragePooling1D, kGlobalAveragePooling2D, kGlobalMaxPooling1D, kGlobalMaxPooling2D,
  kCross, kDotInteraction,
  kConv2D, kMaxPooling2D, kAveragePooling2D,
};

enum class ActivationKind { kLinear, kRelu, kSigmoid, kTanh, kSoftmax, kGelu, kSilu, kElu };

// The config values a layer kind uses (the others keep their defaults, which are Keras's).
struct LayerConfig {
  ActivationKind activation = ActivationKind::kLinear;  // Dense, Activation, Cross's preactivation
  int64_t units = 0;                                    // Dense
  bool use_bias = true;                                 // Dense, Cross
  bool int_input = false;                               // InputLayer: an integer dtype (ids)
  std::vector<int64_t> input_shape;                     // InputLayer, per example
  std::vector<int64_t> target_shape;                    // Reshape (one entry may be -1)
  double rate = 0.0;                                    // Dropout
  int64_t seed = 0;                                     // Dropout (0 when the config has none)
  int64_t axis = -1;                                    // Concatenate (Keras's axis, batch = 0)
  bool normalize = false;                               // Dot
  int64_t input_dim = 0, output_dim = 0;                // Embedding
  double epsilon = 1e-3;                                // LayerNormalization, BatchNormalization
  double momentum = 0.99;                               // BatchNormalization
  bool center = true, scale = true;                     // LayerNormalization, BatchNormalization
  bool keepdims = false;                                // Global pooling
  double max_value = -1.0;                              // ReLU (< 0: none)
  double negative_slope = 0.0, threshold = 0.0;         // ReLU
  int64_t projection_dim = 0;                           // Cross (0: full rank)
  double diag_scale = 0.0;                              // Cross
  bool self_interaction = false, skip_gather = false;   // DotInteraction
  int64_t filters = 0;                                  // Conv2D
  int64_t window_h = 1, window_w = 1;                   // Conv2D kernel_size, pooling pool_size
  int64_t stride_h = 1, stride_w = 1;                   // Conv2D, pooling (pooling: defaults to the window)
  bool same_padding = false;                            // Conv2D, pooling: "same" (else "valid")
  // The config's initializers by key ("kernel_initializer", ...); absent or null keys are not here
  // (the weight then gets Keras's default, keras_initializer.h).
  std::map<std::string, InitializerSpec> initializers;
};

struct GraphLayerSpec {
  std::string name;        // the Keras layer name, unique in the model
  std::string class_name;  // as in the JSON, for messages
  LayerKind kind = LayerKind::kInput;
  LayerConfig config;
  std::vector<int> inputs;             // indices into ModelGraph::layers, in call order
  std::vector<int64_t> output_shape;   // per example (no batch dimension)
};

struct GraphVariableSpec {
  std::string name;  // Keras's: "<layer>/<weight>"
  std::vector<int64_t> shape;
  bool trainable = true;  // false: BatchNormalization's moving statistics
  int layer = 0;          // index into ModelGraph::layers
  InitializerSpec initializer;  // the layer's, or Keras's default for this weight
};

struct ModelGraph {
  std::string name;
  std::vector<GraphLayerSpec> layers;      // topological order
  std::vector<int> inputs;            // InputLayer indices, the model's input order
  int output = 0;                     // the output layer
  bool sequential = false;            // a Sequential model: Keras's model.layers leaves its InputLayer out
  std::vector<GraphVariableSpec> variables;  // in layer order, each layer's in Keras's order

  // The index of the variable called `name`, or -1.
  int FindVariable(const std::string& name) const;
};

// "Dense", "relu", ... for messages.
const char* ActivationName(ActivationKind kind);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_MODEL_GRAPH_H_
