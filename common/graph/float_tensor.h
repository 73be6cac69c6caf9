// A named float tensor by value: a model's weights handed to code that must not depend on the
// worker's executor types (the ONNX export). Row-major, `values.size()` = the product of `shape`.
// Thread-safety: plain values.
#ifndef PSTRAIN_COMMON_GRAPH_FLOAT_TENSOR_H_
#define PSTRAIN_COMMON_GRAPH_FLOAT_TENSOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pstrain {

struct FloatTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;  // row-major
};

// By Keras variable name, e.g. "dense/kernel".
using FloatTensorMap = std::map<std::string, FloatTensor>;

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_FLOAT_TENSOR_H_
