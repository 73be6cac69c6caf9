// Element types of tensors and variables, their names ("float32", ...) and sizes.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_TENSOR_DTYPE_H_
#define PSTRAIN_COMMON_TENSOR_DTYPE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pstrain {

enum class DType { kInvalid, kFloat32, kFloat64, kInt32, kInt64, kFloat16, kBFloat16, kInt8, kUInt8, kBool, kString };

// TensorFlow's names: "float32", "float64", "int32", "int64", "float16", "bfloat16", "int8",
// "uint8", "bool", "string" ("float" and "double" are accepted as aliases when parsing).
std::string DTypeName(DType dtype);

// Returns InvalidArgument naming the accepted names when `name` is unknown.
absl::StatusOr<DType> ParseDType(absl::string_view name);

// Bytes per element; strings count `bytes_per_string` (the partitioners' estimate).
// REQUIRES: dtype != kInvalid.
int64_t DTypeSize(DType dtype, int64_t bytes_per_string = 16);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_TENSOR_DTYPE_H_
