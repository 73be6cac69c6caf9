// Keras initializers for variable shards, independent of partitioning: a row's values depend
// only on (seed, variable name, full shape, GLOBAL row). Random draws come from a counter-based
// generator keyed by hash(seed, variable name) and indexed by each element's flat index in the
// FULL variable, so a variable split 1, 2 or 4 ways, div or mod (strided shards), over any number
// of ps (or held whole by a single process) assembles to the same tensor. Fan-in/fan-out use the
// full shape as Keras does: dense [in,out]: fan_in=in, fan_out=out; conv [kh,kw,cin,cout]:
// fan_in=kh*kw*cin, fan_out=kh*kw*cout. truncated_normal redraws values beyond 2 stddev; he_normal is truncated
// normal with stddev sqrt(2/fan_in)/0.87962566103423978 (Keras's VarianceScaling).
// Thread-safety: pure functions.
#ifndef PSTRAIN_PS_STORE_INITIALIZERS_H_
#define PSTRAIN_PS_STORE_INITIALIZERS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/tensor/tensor.h"
#include "proto/common.pb.h"

namespace pstrain {

// The shape of the rows a shard holds: [rows, full_shape[1:]...], or [] for a rank-0 variable.
// InvalidArgument naming the shard when the spec is inconsistent (negative dims or stride, rows
// outside the full shape, rank-0 variable with rows != 1, empty names, unsupported dtype: only
// float32).
absl::StatusOr<std::vector<int64_t>> ShardShape(const ShardSpecProto& spec);

// The spec's row stride: max(row_stride, 1) (0 is a contiguous shard from an older peer).
int64_t RowStride(const ShardSpecProto& spec);

// Fills `*out` with the shard's initial values: in place when it already is a float32 tensor of
// ShardShape(spec), else replaced by a new one. Returns InvalidArgument naming the shard for a bad
// spec or an unknown initializer type.
absl::Status InitializeRows(const ShardSpecProto& spec, Tensor* out);

// Keras fan-in and fan-out of a full variable shape.
void ComputeFans(const std::vector<int64_t>& full_shape, double* fan_in, double* fan_out);

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_INITIALIZERS_H_
