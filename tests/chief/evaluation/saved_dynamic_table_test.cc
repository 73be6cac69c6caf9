// `pstrain evaluate`'s view of a dynamic table in a checkpoint: the rows of all its .dtab files (any
// shard count) as one table, the initializer's row for a key it lacks, and clear errors for missing,
// mixed or corrupt files.
#include "chief/evaluation/saved_dynamic_table.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/plan/variable_planner.h"
#include "gtest/gtest.h"
#include "ps/store/dynamic_table.h"
#include "ps/store/ps_server.h"
#include "tests/ps/store/trained_dynamic_table.h"

namespace pstrain {
namespace {

constexpr int64_t kDim = 2;
constexpr uint64_t kSeed = 9;

VariableSpec Table() {
  VariableSpec v;
  v.name = "user/embeddings";
  v.shape = {1000, kDim};
  v.initializer = InitializerSpec{"random_uniform"};
  v.sparse = true;
  v.dynamic = DynamicTableSpec{};
  v.dynamic->max_rows = 1000;
  return v;
}

// A trained table of one shard: keys pushed once with SGD.
std::unique_ptr<DynamicTable> Trained(const std::vector<int64_t>& keys) {
  return TrainedDynamicTable("user/embeddings", kDim, kSeed, InitializerToProto(Table().initializer), keys);
}

class SavedDynamicTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/saved_dynamic_table_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(Env::Default()->RemoveAll(dir_).ok());
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
  }
  // Writes `table` as `shards` files, as that many ps would.
  void Write(const DynamicTable& table, int shards) {
    auto split = ReshardDynamicTableStates({table.ExportState()}, shards);
    ASSERT_TRUE(split.ok()) << split.status();
    for (int i = 0; i < shards; ++i) {
      ASSERT_TRUE(Env::Default()
                      ->WriteFileAtomic(dir_ + "/" + DynamicShardFileName("user/embeddings", i, shards),
                                        EncodeDynamicTableState((*split)[i]))
                      .ok());
    }
  }
  std::string dir_;
};

TEST_F(SavedDynamicTableTest, ReadsEveryShardAndGivesMissingKeysTheirInitialRow) {
  const std::vector<int64_t> keys = {-7, 3, int64_t{1} << 50, 42, 99};
  auto table = Trained(keys);
  Write(*table, 3);
  auto saved = SavedDynamicTable::Read(Env::Default(), dir_, Table(), kSeed);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->rows(), 5);
  const std::vector<int64_t> lookup = {42, 12345, -7, 3, int64_t{1} << 50, 99, -1};
  Tensor got;
  saved->Lookup(lookup, &got);
  ASSERT_EQ(got.shape(), (std::vector<int64_t>{7, kDim}));
  // The trained table answers the same: held rows as trained, others from the initializer.
  std::vector<float> want(lookup.size() * kDim);
  ASSERT_TRUE(table->Lookup(lookup, absl::Span<float>(want)).ok());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got.flat()[i], want[i]) << i;
  // A held row is not its initial one (the push moved it).
  auto fresh = Trained({});
  std::vector<float> initial(kDim);
  ASSERT_TRUE(fresh->Lookup(std::vector<int64_t>{42}, absl::Span<float>(initial)).ok());
  EXPECT_NE(got.flat()[0], initial[0]);
}

TEST_F(SavedDynamicTableTest, MissingMixedOrCorruptFilesAreErrors) {
  auto missing = SavedDynamicTable::Read(Env::Default(), dir_, Table(), kSeed);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no file of dynamic table user/embeddings"), absl::string_view::npos)
      << missing.status();

  auto table = Trained({1, 2, 3, 4, 5, 6});
  Write(*table, 2);
  ASSERT_TRUE(Env::Default()->RemoveAll(dir_ + "/" + DynamicShardFileName("user/embeddings", 1, 2)).ok());
  auto lacking = SavedDynamicTable::Read(Env::Default(), dir_, Table(), kSeed);
  EXPECT_EQ(lacking.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(lacking.status().message().find("dynamic-user%2Fembeddings-1-of-2.dtab"), absl::string_view::npos)
      << lacking.status();

  Write(*table, 1);  // beside shard 0 of 2: two runs' files
  auto mixed = SavedDynamicTable::Read(Env::Default(), dir_, Table(), kSeed);
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kDataLoss) << mixed.status();

  ASSERT_TRUE(Env::Default()->RemoveAll(dir_ + "/" + DynamicShardFileName("user/embeddings", 0, 2)).ok());
  VariableSpec wide = Table();
  wide.shape[1] = kDim + 1;
  auto dim = SavedDynamicTable::Read(Env::Default(), dir_, wide, kSeed);
  EXPECT_EQ(dim.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dim.status().message().find("embedding_dim is 3"), absl::string_view::npos) << dim.status();

  const std::string file = dir_ + "/" + DynamicShardFileName("user/embeddings", 0, 1);
  auto bytes = Env::Default()->ReadRegularFile(file, 1 << 20);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  std::string corrupt = *bytes;
  corrupt[corrupt.size() / 2] ^= 0x40;
  ASSERT_TRUE(Env::Default()->WriteFileAtomic(file, corrupt).ok());
  auto bad = SavedDynamicTable::Read(Env::Default(), dir_, Table(), kSeed);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << bad.status();
  EXPECT_NE(bad.status().message().find(file), absl::string_view::npos) << bad.status();

  VariableSpec dense;
  dense.name = "w";
  dense.shape = {2};
  EXPECT_EQ(SavedDynamicTable::Read(Env::Default(), dir_, dense, kSeed).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pstrain
