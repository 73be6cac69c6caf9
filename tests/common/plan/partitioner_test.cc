// The partitioner cases from TensorFlow's own tests and documentation, plus argument errors.
#include "common/plan/partitioner.h"

#include "gtest/gtest.h"

namespace pstrain {
namespace {

using Kind = PartitionerSpec::Kind;

int64_t Shards(PartitionerSpec spec, std::vector<int64_t> shape, DType dtype = DType::kFloat32) {
  auto n = NumShards(spec, shape, dtype);
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? *n : -1;
}

PartitionerSpec Fixed(int64_t n) { PartitionerSpec s; s.kind = Kind::kFixedShards; s.num_shards = n; return s; }
PartitionerSpec MinSize(int64_t min_bytes, int64_t max_shards = -1) {
  PartitionerSpec s; s.kind = Kind::kMinSize; s.min_shard_bytes = min_bytes; s.max_shards = max_shards; return s;
}
PartitionerSpec MaxSize(int64_t max_bytes, int64_t max_shards = -1) {
  PartitionerSpec s; s.kind = Kind::kMaxSize; s.max_shard_bytes = max_bytes; s.max_shards = max_shards; return s;
}

TEST(PartitionerTest, FixedShards) {
  EXPECT_EQ(Shards(Fixed(4), {10}), 4);
  EXPECT_EQ(DivSplit(10, 4), (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(Shards(Fixed(4), {3}), 3);
  EXPECT_EQ(DivSplit(3, 3), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(Shards(Fixed(5), {13, 8}), 5);
  EXPECT_EQ(DivSplit(13, 5), (std::vector<int64_t>{3, 3, 3, 2, 2}));
}

TEST(PartitionerTest, MinSize) {
  EXPECT_EQ(Shards(MinSize(4, 2), {6, 1}), 2);
  EXPECT_EQ(Shards(MinSize(4, 10), {6, 1}), 6);
  EXPECT_EQ(Shards(MinSize(262144, 2), {1024, 1024}), 2);
  EXPECT_EQ(Shards(MinSize(262144), {1024, 1024}), 1);  // max_shards defaults to 1
  EXPECT_EQ(Shards(MinSize(262144, 4), {1000, 100}), 2);
  EXPECT_EQ(Shards(MinSize(262144, 10), {100000}, DType::kString), 7);
  EXPECT_EQ(DivSplit(100000, 7), (std::vector<int64_t>{14286, 14286, 14286, 14286, 14286, 14285, 14285}));
  PartitionerSpec per_string = MinSize(262144, 10);
  per_string.bytes_per_string = 32;  // 3.2 MB / 256 KiB = 12.2 -> capped at 10
  EXPECT_EQ(Shards(per_string, {100000}, DType::kString), 10);
}

TEST(PartitionerTest, MaxSize) {
  EXPECT_EQ(Shards(MaxSize(4), {6, 1}), 6);
  EXPECT_EQ(Shards(MaxSize(4, 2), {6, 1}), 2);
  EXPECT_EQ(Shards(MaxSize(1024), {6, 1}), 1);
  // 10x30 float64: 240 bytes per row, floor(1000/240) = 4 rows per shard, ceil(10/4) = 3 shards.
  EXPECT_EQ(Shards(MaxSize(1000), {10, 30}, DType::kFloat64), 3);
  EXPECT_EQ(DivSplit(10, 3), (std::vector<int64_t>{4, 3, 3}));
  // A row larger than max_shard_bytes still gets one row per shard.
  EXPECT_EQ(Shards(MaxSize(10), {5, 100}), 5);
}

TEST(PartitionerTest, ElementSizes) {
  EXPECT_EQ(Shards(MaxSize(16), {8, 2}, DType::kFloat16), 2);   // 4 bytes/row -> 4 rows/shard
  EXPECT_EQ(Shards(MaxSize(16), {8, 2}, DType::kInt64), 8);     // 16 bytes/row -> 1 row/shard
  EXPECT_EQ(Shards(MaxSize(16), {8, 2}, DType::kUInt8), 1);     // 2 bytes/row -> 8 rows/shard
  EXPECT_EQ(Shards(MaxSize(16), {8, 2}, DType::kBFloat16), 2);
}

TEST(PartitionerTest, RankZeroAndNone) {
  EXPECT_EQ(Shards(Fixed(4), {}), 1);
  EXPECT_EQ(Shards(PartitionerSpec{}, {100, 100}), 1);
}

TEST(PartitionerTest, InvalidArgumentsAreErrorsNotCrashes) {
  EXPECT_EQ(NumShards(Fixed(0), {10}, DType::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NumShards(Fixed(-2), {10}, DType::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NumShards(MinSize(0), {10}, DType::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NumShards(MinSize(4, 0), {10}, DType::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NumShards(MaxSize(0), {10}, DType::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NumShards(MaxSize(10, -5), {10}, DType::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NumShards(Fixed(2), {0, 4}, DType::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NumShards(MaxSize(8), {4, 0}, DType::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NumShards(Fixed(2), {-1}, DType::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePartitionerKind("bogus").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pstrain
