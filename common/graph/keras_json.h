// Reads a Keras model's `to_json()` into a ModelGraph (model_graph.h): Keras 3 and Keras 2
// (tf.keras up to 2.15, tf_keras) shapes, Sequential and Functional. Everything the executor cannot
// run is refused here, before any training starts: several outputs, a layer called more than once
// (shared layers), classes outside the supported set (Lambda, custom layers), config values outside
// it (masking, ...). Each message names the layer, the key and what is supported.
// Thread-safety: a plain function.
#ifndef PSTRAIN_COMMON_GRAPH_KERAS_JSON_H_
#define PSTRAIN_COMMON_GRAPH_KERAS_JSON_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/graph/model_graph.h"
#include "nlohmann/json.hpp"

namespace pstrain {

// Parses `json` (the text of a to_json()). InvalidArgument, prefixed with `what` (a path, for
// messages), for malformed JSON, an unsupported model and every refusal above.
absl::StatusOr<ModelGraph> ReadKerasModelJson(absl::string_view json, absl::string_view what);

// Sets `input_dim` of each Embedding layer named in `input_dims` (layer name -> rows) in the
// to_json() document `model`, either Keras shape. InvalidArgument naming a layer that the model
// lacks or that is not an Embedding; `model` is unchanged then.
absl::Status SetEmbeddingInputDims(const std::map<std::string, int64_t>& input_dims, nlohmann::json* model);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_KERAS_JSON_H_
