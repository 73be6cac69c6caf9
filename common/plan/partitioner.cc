#include "common/plan/partitioner.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/platform/checked_math.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"

namespace pstrain {
namespace {

absl::Status RequirePositive(int64_t value, const char* name, const std::string& kind) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(kind, " partitioner: ", name, " must be positive, got ", value));
}

}  // namespace

std::string PartitionerSpec::KindName() const {
  switch (kind) {
    case Kind::kNone: return "none";
    case Kind::kFixedShards: return "fixed_shards";
    case Kind::kMinSize: return "min_size";
    case Kind::kMaxSize: return "max_size";
  }
  return "none";
}

absl::StatusOr<PartitionerSpec::Kind> ParsePartitionerKind(absl::string_view name) {
  using Kind = PartitionerSpec::Kind;
  if (name.empty() || name == "none") return Kind::kNone;
  if (name == "fixed_shards" || name == "FixedShardsPartitioner") return Kind::kFixedShards;
  if (name == "min_size" || name == "MinSizePartitioner") return Kind::kMinSize;
  if (name == "max_size" || name == "MaxSizePartitioner") return Kind::kMaxSize;
  return absl::InvalidArgumentError(absl::StrCat("unknown partitioner \"", name,
                                                 "\"; use none, fixed_shards, min_size or max_size"));
}

absl::Status ValidatePartitioner(const PartitionerSpec& spec) {
  const std::string kind = spec.KindName();
  if (spec.strategy != "div" && spec.strategy != "mod") {
    return absl::InvalidArgumentError(
        absl::StrCat("partitioner strategy \"", spec.strategy, "\" is unknown; use div or mod"));
  }
  switch (spec.kind) {
    case PartitionerSpec::Kind::kNone:
      return absl::OkStatus();
    case PartitionerSpec::Kind::kFixedShards:
      return RequirePositive(spec.num_shards, "num_shards", kind);
    case PartitionerSpec::Kind::kMinSize:
      RETURN_IF_ERROR(RequirePositive(spec.min_shard_bytes, "min_shard_bytes", kind));
      if (spec.max_shards != -1) RETURN_IF_ERROR(RequirePositive(spec.max_shards, "max_shards", kind));
      return RequirePositive(spec.bytes_per_string, "bytes_per_string", kind);
    case PartitionerSpec::Kind::kMaxSize:
      RETURN_IF_ERROR(RequirePositive(spec.max_shard_bytes, "max_shard_bytes", kind));
      if (spec.max_shards < -1) {
        return absl::InvalidArgumentError(
            absl::StrCat("max_size partitioner: max_shards must be >= 0 (0 means unlimited), got ", spec.max_shards));
      }
      return RequirePositive(spec.bytes_per_string, "bytes_per_string", kind);
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> NumShards(const PartitionerSpec& spec, absl::Span<const int64_t> shape, DType dtype) {
  RETURN_IF_ERROR(ValidatePartitioner(spec));
  if (dtype == DType::kInvalid) return absl::InvalidArgumentError("cannot partition a variable of invalid dtype");
  for (int64_t d : shape) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeString(shape), " has a negative dimension"));
  }
  ASSIGN_OR_RETURN(const int64_t bytes, CheckedNumBytes(shape, DTypeSize(dtype, spec.bytes_per_string), "its size"));
  (void)bytes;  // only checked here: every product below fits
  if (shape.empty() || spec.kind == PartitionerSpec::Kind::kNone) return 1;
  const int64_t rows = shape[0];
  const int64_t elements = NumElements(shape);
  if (rows == 0 || elements == 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot partition a variable of shape ", ShapeString(shape),
                                                   ": it has no elements"));
  }
  const double element_size = static_cast<double>(DTypeSize(dtype, spec.bytes_per_string));
  switch (spec.kind) {
    case PartitionerSpec::Kind::kFixedShards:
      return std::min(spec.num_shards, rows);
    case PartitionerSpec::Kind::kMinSize: {
      const int64_t max_shards = spec.max_shards == -1 ? 1 : spec.max_shards;
      const double total_bytes = static_cast<double>(elements) * element_size;
      const double partitions = total_bytes / static_cast<double>(spec.min_shard_bytes);
      const int64_t wanted = static_cast<int64_t>(std::ceil(partitions));
      return std::max<int64_t>(1, std::min({rows, max_shards, wanted}));
    }
    case PartitionerSpec::Kind::kMaxSize: {
      const double bytes_per_row = (static_cast<double>(elements) / static_cast<double>(rows)) * element_size;
      const double rows_per_shard =
          std::max(1.0, std::floor(static_cast<double>(spec.max_shard_bytes) / bytes_per_row));
      int64_t shards = static_cast<int64_t>(std::ceil(static_cast<double>(rows) / rows_per_shard));
      const int64_t max_shards = spec.max_shards == -1 ? 0 : spec.max_shards;
      if (max_shards > 0) shards = std::min(max_shards, shards);
      return shards;
    }
    case PartitionerSpec::Kind::kNone:
      break;
  }
  return 1;
}

std::vector<int64_t> DivSplit(int64_t rows, int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n), rows / n);
  for (int64_t i = 0; i < rows % n; ++i) ++out[static_cast<size_t>(i)];
  return out;
}

}  // namespace pstrain
