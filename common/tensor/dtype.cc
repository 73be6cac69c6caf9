#include "common/tensor/dtype.h"

#include "absl/strings/str_cat.h"

namespace pstrain {
namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  int64_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kFloat32, "float32", 4}, {DType::kFloat64, "float64", 8}, {DType::kInt32, "int32", 4},
    {DType::kInt64, "int64", 8},     {DType::kFloat16, "float16", 2}, {DType::kBFloat16, "bfloat16", 2},
    {DType::kInt8, "int8", 1},       {DType::kUInt8, "uint8", 1},     {DType::kBool, "bool", 1},
    {DType::kString, "string", 0},
};

}  // namespace

std::string DTypeName(DType dtype) {
  for (const auto& info : kDTypes) {
    if (info.dtype == dtype) return info.name;
  }
  return "invalid";
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  for (const auto& info : kDTypes) {
    if (name == info.name) return info.dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dtype \"", name,
      "\"; use one of float32, float64, int32, int64, float16, bfloat16, int8, uint8, bool, string"));
}

int64_t DTypeSize(DType dtype, int64_t bytes_per_string) {
  if (dtype == DType::kString) return bytes_per_string;
  for (const auto& info : kDTypes) {
    if (info.dtype == dtype) return info.size;
  }
  return 0;
}

}  // namespace pstrain
