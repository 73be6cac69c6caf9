// A model given as a layer list (the presets; a job spec's model.layers, with model.fields for a
// CTR model) written as the Keras functional model that computes the same thing with the same
// variables: names, shapes and initializers, so a layer-list checkpoint's values are that model's
// weights. A CTR model becomes a float input "numeric" (numeric_inputs wide, when there are any)
// and one int32 input of shape (1,) per field ("c0", "c1", ... in field order), each field's
// Embedding flattened and concatenated after the numeric features, then the dense tower.
// Used by `pstrain export` (Keras weights and ONNX of layer-list checkpoints) and by tests that
// run the layer-list models through the graph executor.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_GRAPH_LAYER_MODEL_KERAS_H_
#define PSTRAIN_COMMON_GRAPH_LAYER_MODEL_KERAS_H_

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "nlohmann/json.hpp"

namespace pstrain {

enum class KerasJsonFlavor {
  kKeras3,  // keras.models.model_from_json of Keras 3
  kKeras2,  // tf.keras up to 2.15 and tf_keras
};

// The to_json() document of `model` (a layer list: !model.is_graph()). InvalidArgument when the
// model is a Keras model already, or when two fields share a layer name (one Embedding layer
// called twice, which a Keras functional model cannot hold as one table of two inputs here).
absl::StatusOr<nlohmann::json> LayerModelAsKerasJson(const ModelSpec& model, KerasJsonFlavor flavor);

// `model` as a Keras model (ModelSpec::graph set) with the same loss, from_logits, dynamic tables
// (model.dynamic_tables of the field's Embedding layer) and bag combiners; a Keras model is
// returned as it is.
absl::StatusOr<ModelSpec> LayerModelAsGraph(const ModelSpec& model,
                                            KerasJsonFlavor flavor = KerasJsonFlavor::kKeras3);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_LAYER_MODEL_KERAS_H_
