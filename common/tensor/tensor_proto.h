// Conversions between Tensor and the wire's TensorProto (raw little-endian bytes).
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_TENSOR_TENSOR_PROTO_H_
#define PSTRAIN_COMMON_TENSOR_TENSOR_PROTO_H_

#include "absl/status/statusor.h"
#include "common/tensor/dtype.h"
#include "common/tensor/tensor.h"
#include "proto/common.pb.h"

namespace pstrain {

DataType ToProtoDType(DType dtype);
DType FromProtoDType(DataType dtype);

// Copies `tensor` into `proto` (dtype, shape, bytes).
void TensorToProto(const Tensor& tensor, TensorProto* proto);

// Parses `proto` into a Tensor. Returns InvalidArgument naming `what` (e.g. the shard name) when
// the dtype is invalid or unsupported, a dimension is negative, or the byte count does not match
// shape x element size (a shape mismatch on the wire).
absl::StatusOr<Tensor> TensorFromProto(const TensorProto& proto, absl::string_view what);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_TENSOR_TENSOR_PROTO_H_
