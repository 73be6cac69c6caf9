// A model's weights in Keras's HDF5 weight files, in and out, so a model trained by pstrain loads in
// Keras (`model.load_weights`) and a Keras model's weights can start a pstrain run. Two layouts:
//
//   Keras 3 (`model.save_weights("x.weights.h5")`): a group per layer at `layers/<class>` where
//     <class> is the layer's class in snake_case, `_1`, `_2`... for its second, third... layer of
//     that class, in the model's layer order (Keras matches layers by these paths, not by name);
//     the layer's variables are datasets `vars/0`, `vars/1`... (trainable first, then the
//     others, each in Keras's order) and `vars` carries the layer's name as attribute `name`. A
//     Functional model's InputLayers have groups too, a Sequential's do not; the model's own
//     group `vars` is empty.
//   Keras 2 legacy (`model.save_weights("x.h5")` in tf.keras 2.x): root attributes `layer_names`
//     (every layer, model order), `backend`, `keras_version`; a group per layer named after it with
//     attribute `weight_names` ("dense/kernel:0", ...) naming its datasets inside the group;
//     `top_level_model_weights` with none.
//
// Variables are the ModelGraph's (keras_json.h): `dense/kernel`, `cross/dense_1/bias`; values are
// float32 in row-major order. A TensorFlow Recommenders Cross layer exists only in Keras 2, so a
// graph with one is refused in the Keras 3 layout.
// Thread-safety: the functions may be called from any thread; HDF5 (not thread-safe in Debian's
// build) is used by one call at a time.
#ifndef PSTRAIN_COMMON_GRAPH_KERAS_WEIGHTS_H_
#define PSTRAIN_COMMON_GRAPH_KERAS_WEIGHTS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/graph/float_tensor.h"
#include "common/graph/model_graph.h"
#include "common/platform/file_rules.h"

namespace pstrain {

using WeightValue = FloatTensor;    // row-major; as many values as the shape's product
using NamedWeights = FloatTensorMap;  // by the graph's variable names

enum class KerasWeightsFormat { kKeras3, kKeras2 };

// A Keras weights file as pstrain reads it: a regular file (symlinks followed) up to 64 GiB.
inline constexpr FileRules kKerasWeightsFile{"Keras weights file", 64 * 1024 * kMiB, true, 0};

// Writes every variable of `graph` from `weights` to `path` in `format`, through a temporary file
// next to it renamed over `path` at the end, so a failed write leaves no partial file.
// InvalidArgument when a variable is missing from `weights`, its shape differs from the graph's or
// its values do not fill it (naming the variable), or when `weights` holds a name the graph lacks;
// InvalidArgument for a Cross layer in the Keras 3 layout; Internal when HDF5 or the rename fails.
absl::Status WriteKerasWeights(const ModelGraph& graph, const NamedWeights& weights, KerasWeightsFormat format,
                               const std::string& path);

// Reads every variable of `graph` from the Keras weights file at `path` (either layout, found from
// its contents). Keras 3 files are matched by layer path as Keras does; Keras 2 files by layer name,
// each layer's weights in order. InvalidArgument, naming the file and the layer or variable, for a
// file that is not HDF5 or not a Keras weights file, a missing or extra layer, a layer with another
// number of weights, a shape other than the graph's (expected vs found) or a non-float dataset;
// NotFound / InvalidArgument / OutOfRange from kKerasWeightsFile's rules.
absl::StatusOr<NamedWeights> ReadKerasWeights(const ModelGraph& graph, const std::string& path);
// The same, where each variable named in `any_rows` may hold any number (>= 1) of rows in the file
// (its other dimensions are checked) and is read with the file's shape: a dynamic table's
// Embedding, whose rows are keyed (initial_weights.h).
absl::StatusOr<NamedWeights> ReadKerasWeights(const ModelGraph& graph, const std::string& path,
                                              const std::set<std::string>& any_rows);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_KERAS_WEIGHTS_H_
