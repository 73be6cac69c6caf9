// Variable partitioners with TensorFlow's exact arithmetic (axis 0): FixedShardsPartitioner,
// MinSizePartitioner and MaxSizePartitioner, plus the "div" row split and, for embedding tables,
// TensorFlow 1's "mod" partition_strategy (row r in shard r % n).
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_PLAN_PARTITIONER_H_
#define PSTRAIN_COMMON_PLAN_PARTITIONER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/tensor/dtype.h"

namespace pstrain {

struct PartitionerSpec {
  enum class Kind { kNone, kFixedShards, kMinSize, kMaxSize };
  Kind kind = Kind::kNone;
  int64_t num_shards = 0;               // fixed_shards
  int64_t min_shard_bytes = 256 << 10;  // min_size (TensorFlow's default 256 KiB)
  int64_t max_shard_bytes = 0;          // max_size (required)
  int64_t max_shards = -1;              // -1: the kind's default (min_size: 1, max_size: 0 = unlimited)
  int64_t bytes_per_string = 16;
  // How an embedding table's rows map to its shards (dense variables are always "div"):
  // "div": shard i holds a contiguous range; "mod": shard i of n holds rows i, i+n, i+2n, ...
  // Both give shard i the same number of rows (the div split's: ceil((rows - i) / n)).
  std::string strategy = "div";

  // "none", "fixed_shards", "min_size", "max_size".
  std::string KindName() const;
};

// Parses a partitioner kind name; InvalidArgument listing the accepted names otherwise.
absl::StatusOr<PartitionerSpec::Kind> ParsePartitionerKind(absl::string_view name);

// Checks the arguments (positive where required, strategy "div" or "mod"). InvalidArgument naming
// the bad argument.
absl::Status ValidatePartitioner(const PartitionerSpec& spec);

// Number of shards along axis 0 for a variable of `shape` and `dtype`:
//   fixed_shards: min(num_shards, rows)
//   min_size:     max(1, min(rows, max_shards, ceil(total_bytes / min_shard_bytes)))
//   max_size:     rows_per_shard = max(1, floor(max_shard_bytes / ((elements / rows) * element_size)));
//                 ceil(rows / rows_per_shard), capped by max_shards when > 0
// computed in double in that order. Rank-0 variables and Kind::kNone give 1. Returns
// InvalidArgument for invalid arguments, zero rows or zero-size variables.
absl::StatusOr<int64_t> NumShards(const PartitionerSpec& spec, absl::Span<const int64_t> shape, DType dtype);

// "div" split of `rows` into `n` shards: the first rows % n shards get one extra row.
// REQUIRES: 1 <= n <= rows.
std::vector<int64_t> DivSplit(int64_t rows, int64_t n);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLAN_PARTITIONER_H_
