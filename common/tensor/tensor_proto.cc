#include "common/tensor/tensor_proto.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/platform/checked_math.h"

namespace pstrain {

DataType ToProtoDType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return DT_FLOAT;
    case DType::kFloat64: return DT_DOUBLE;
    case DType::kInt32: return DT_INT32;
    case DType::kInt64: return DT_INT64;
    case DType::kFloat16: return DT_HALF;
    case DType::kBFloat16: return DT_BFLOAT16;
    case DType::kInt8: return DT_INT8;
    case DType::kUInt8: return DT_UINT8;
    case DType::kBool: return DT_BOOL;
    case DType::kString: return DT_STRING;
    case DType::kInvalid: break;
  }
  return DT_INVALID;
}

DType FromProtoDType(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT: return DType::kFloat32;
    case DT_DOUBLE: return DType::kFloat64;
    case DT_INT32: return DType::kInt32;
    case DT_INT64: return DType::kInt64;
    case DT_HALF: return DType::kFloat16;
    case DT_BFLOAT16: return DType::kBFloat16;
    case DT_INT8: return DType::kInt8;
    case DT_UINT8: return DType::kUInt8;
    case DT_BOOL: return DType::kBool;
    case DT_STRING: return DType::kString;
    default: return DType::kInvalid;
  }
}

void TensorToProto(const Tensor& tensor, TensorProto* proto) {
  proto->set_dtype(ToProtoDType(tensor.dtype()));
  proto->clear_shape();
  for (int64_t d : tensor.shape()) proto->add_shape(d);
  proto->set_data(reinterpret_cast<const char*>(tensor.raw()), tensor.num_bytes());
}

absl::StatusOr<Tensor> TensorFromProto(const TensorProto& proto, absl::string_view what) {
  DType dtype = FromProtoDType(proto.dtype());
  if (dtype == DType::kInvalid || dtype == DType::kString) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": unsupported tensor dtype ", DataType_Name(proto.dtype())));
  }
  std::vector<int64_t> shape(proto.shape().begin(), proto.shape().end());
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": negative dimension in shape ", ShapeString(shape)));
    }
  }
  absl::StatusOr<int64_t> bytes = CheckedNumBytes(shape, DTypeSize(dtype), what);
  if (!bytes.ok()) return bytes.status();
  const size_t expected = static_cast<size_t>(*bytes);
  if (proto.data().size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": tensor of shape ", ShapeString(shape), " and dtype ", DTypeName(dtype), " needs ", expected,
        " bytes but ", proto.data().size(), " arrived"));
  }
  Tensor t(dtype, std::move(shape));
  if (expected > 0) std::memcpy(t.raw(), proto.data().data(), expected);
  return t;
}

}  // namespace pstrain
