// The trainable variables a model declares, in creation order, with shapes inferred layer by layer
// from the input shape (Keras naming: "conv2d/kernel", "conv2d/bias", "dense_1/kernel", ...).
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_MODEL_VARIABLES_H_
#define PSTRAIN_COMMON_MODEL_VARIABLES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "common/job_spec.h"

namespace pstrain {

struct VariableSpec {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;
  InitializerSpec initializer;
  // An embedding table: partitioned like any variable, but never moved whole: workers pull and
  // push only the rows a step touches. Tables are 2-D [vocabulary_size, embedding_dim], float32.
  bool sparse = false;
};

// Shape of one example after each layer: result[i] is the output of layers[i]; InvalidArgument
// naming the layer when a layer cannot take its input (e.g. dense on an unflattened image).
absl::StatusOr<std::vector<std::vector<int64_t>>> LayerOutputShapes(const ModelSpec& model);

// Variables in creation order: for each layer its kernel, then its bias. InvalidArgument naming the
// layer or variable when a shape's size overflows (checked arithmetic, see checked_math.h).
absl::StatusOr<std::vector<VariableSpec>> ModelVariables(const ModelSpec& model);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_MODEL_VARIABLES_H_
