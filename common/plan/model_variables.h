// The variables a model declares (a Keras model: its graph's variables, in graph order, with the
// initializers its to_json names; the non-trainable ones, BatchNormalization's moving statistics,
// marked so), in creation order, with shapes inferred layer by layer
// from the input shape (Keras naming: "conv2d/kernel", "conv2d/bias", "dense_1/kernel", ...). A
// CTR model declares its embedding tables first ("embedding/embeddings", "embedding_1/embeddings",
// ... in field order), then the dense tower's variables. A Keras model with integer inputs: the
// tables of the Embedding layers its ids feed are sparse, wherever they are in graph order.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_PLAN_MODEL_VARIABLES_H_
#define PSTRAIN_COMMON_PLAN_MODEL_VARIABLES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "common/tensor/dtype.h"

namespace pstrain {

struct VariableSpec {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;
  InitializerSpec initializer;
  // An embedding table [vocabulary_size, embedding_dim], float32: partitioned like any variable
  // (axis 0), but never moved whole: a step pulls and pushes only the rows its batch touches.
  bool sparse = false;
  // False for a Keras model's non-trainable variables (BatchNormalization's moving mean and
  // variance): their "gradient" is an additive update, which the ps and `pstrain train` add as is,
  // never through the optimizer (ShardSpecProto.non_trainable).
  bool trainable = true;
  // Set for a dynamic table (sparse too): shape is [dynamic->max_rows, dim], its declared
  // capacity; the planner gives it one shard per ps task, placed by key hash (DynamicKeyOwner).
  std::optional<DynamicTableSpec> dynamic;
};

// Shape of one example after each layer: result[i] is the output of layers[i]; InvalidArgument
// naming the layer when a layer cannot take its input (e.g. dense on an unflattened image).
absl::StatusOr<std::vector<std::vector<int64_t>>> LayerOutputShapes(const ModelSpec& model);

// Variables in creation order: the embedding tables (CTR models), then for each layer its kernel,
// then its bias. InvalidArgument naming the layer or variable when a shape's size overflows (checked
// arithmetic, see checked_math.h).
absl::StatusOr<std::vector<VariableSpec>> ModelVariables(const ModelSpec& model);

// Per categorical field (model.fields, in order): the indices into `variables` of the tables its ids
// look up, the first one defining the rows (a Keras model's input may feed several Embedding
// layers of one input_dim). InvalidArgument when a table is not a sparse variable of `variables`.
absl::StatusOr<std::vector<std::vector<int>>> FieldTableVariables(const ModelSpec& model,
                                                                  const std::vector<VariableSpec>& variables);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLAN_MODEL_VARIABLES_H_
