// Checkpoints edited, truncated or pointed elsewhere (classes: sizes read from a checkpoint,
// nesting, paths outside the checkpoint directory): reading one fails with DataLoss naming the
// file, before anything large is allocated, and never reads outside the checkpoint directory.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/checkpoint/checkpoint_index.h"
#include "common/checkpoint/checkpoint_reader.h"
#include "common/config/json_util.h"
#include "common/platform/env.h"
#include "common/wire/protocol_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "ps/store/ps_server.h"
#include "tests/ps/ps_test_util.h"

namespace pstrain {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using nlohmann::json;

class CheckpointBadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = absl::StrCat(::testing::TempDir(), "/ckpt_bad_input_", ::getpid(), "_",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    dir_ = root_ + "/ckpt-3";
    std::filesystem::create_directories(dir_);
    std::ofstream(root_ + "/secret.shard") << std::string(80, 's');  // beside, not inside, the checkpoint
    // Variable "w" [10,2], one shard, saved as the chief does.
    PsServer server(PsServer::Options{"ps:0"});
    LocalPsClient client(&server);
    CreateShardsResponse created;
    ASSERT_TRUE(client
                    .CreateShards(testing_util::CreateRequest({testing_util::Spec("w", {10, 2}, 0, 10, "ones")},
                                                              UPDATE_ASYNC, 1),
                                  &created)
                    .ok());
    SaveRequest save;
    save.set_checkpoint_dir(dir_);
    SaveResponse saved;
    ASSERT_TRUE(client.Save(save, &saved).ok());
    CheckpointIndex index;
    index.global_step = 3;
    index.shards.assign(saved.shards().begin(), saved.shards().end());
    ASSERT_TRUE(WriteCheckpointIndex(Env::Default(), dir_, index).ok());
    std::stringstream ss;
    ss << std::ifstream(dir_ + "/index.json").rdbuf();
    index_ = json::parse(ss.str());
    ASSERT_TRUE(Read().ok());
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void WriteIndex(const std::string& text) { std::ofstream(dir_ + "/index.json", std::ios::trunc) << text; }
  void WriteIndex(const json& doc) { WriteIndex(doc.dump()); }
  std::string ShardFile() const { return dir_ + "/" + index_["shards"][0]["file"].get<std::string>(); }

  absl::StatusOr<Tensor> Read(int64_t max_bytes = 0) {
    absl::StatusOr<CheckpointIndex> index = ReadCheckpointIndex(Env::Default(), dir_);
    if (!index.ok()) return index.status();
    return ReadCheckpointRows(Env::Default(), dir_, *index, "w", 0, -1, "", max_bytes);
  }

  std::string root_, dir_;
  json index_;
};

TEST_F(CheckpointBadInputTest, EditedIndexEntriesAreCorruptNotTrusted) {
  struct Case {
    const char* field;
    json value;
    const char* message;
  };
  const Case cases[] = {
      {"full_shape", json::array({1000000000000, 2}), "holds"},            // 8 TB promised, 80 bytes on disk
      {"full_shape", json::array({int64_t{1} << 62, 4}), "more than pstrain can hold"},
      {"full_shape", json::array({4294967296, 4294967296, 2}), "more than pstrain can hold"},
      {"full_shape", json::array({-10, 2}), "bad dimension"},
      {"full_shape", json::parse("[18446744073709551615, 2]"), "bad dimension"},
      {"rows", json(int64_t{1} << 62), "rows outside the variable"},
      {"row_offset", json(INT64_MAX), "rows outside the variable"},
      {"file", json("../secret.shard"), "is a path, not a file name"},
      {"file", json("/etc/passwd"), "is an absolute path"},
      {"file", json(".."), "names a directory"},
      {"file", json(""), "is empty"},
      {"dtype", json("int8"), "is not float32"},
      {"dtype", json("string"), "is not float32"},
      {"full_shape", json::array({0, 2}), "bad dimension"},
      {"full_shape", json::array({10, 0}), "bad dimension"},
      {"row_stride", json(0), "rows outside the variable"},  // strided (table) slices
      {"row_stride", json(-3), "rows outside the variable"},
      {"row_stride", json(2), "rows outside the variable"},  // rows 0, 2, ..., 18 of 10
      {"row_stride", json(INT64_MAX), "rows outside the variable"},
      {"row_stride", json(1e300), "row_stride"},
  };
  for (const Case& c : cases) {
    json doc = index_;
    doc["shards"][0][c.field] = c.value;
    WriteIndex(doc);
    absl::StatusOr<Tensor> t = Read();
    ASSERT_FALSE(t.ok()) << c.field << " " << c.value.dump();
    EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss) << c.field << " " << c.value.dump();
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.message)) << c.field << " " << c.value.dump();
  }
}

// Two slices naming one file: each would pass its own size and checksum and read the same bytes
// as rows they never held.
TEST_F(CheckpointBadInputTest, OneFileListedForTwoSlicesIsCorrupt) {
  json doc = index_;
  json second = doc["shards"][0];
  for (json* s : {&doc["shards"][0], &second}) (*s)["full_shape"] = json::array({20, 2});
  second["row_offset"] = 10;
  second["shard_name"] = "w/part_1";
  doc["shards"].push_back(second);
  WriteIndex(doc);
  absl::StatusOr<CheckpointIndex> index = ReadCheckpointIndex(Env::Default(), dir_);
  ASSERT_TRUE(index.ok()) << index.status();
  CheckpointReader reader(Env::Default(), dir_, &*index);
  absl::Status s = reader.VerifyAll();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("is listed for two slices"));
  CheckpointReader rows(Env::Default(), dir_, &*index);
  absl::StatusOr<Tensor> t = rows.ReadRows("w", 0, -1, "");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("is listed for two slices"));
}

TEST_F(CheckpointBadInputTest, MalformedIndexDocumentsAreCorrupt) {
  const std::string nested = "{\"global_step\": 3, \"job_spec\": " + std::string(100000, '[') +
                             std::string(100000, ']') + ", \"shards\": []}";
  const std::string cases[] = {nested, "", "[]", "{\"global_step\": 18446744073709551615, \"shards\": []}",
                               "{\"global_step\": -1, \"shards\": []}", "{\"global_step\": 3, \"shards\": {}}",
                               std::string(1 << 20, '{')};
  for (const std::string& text : cases) {
    WriteIndex(text);
    absl::StatusOr<CheckpointIndex> index = ReadCheckpointIndex(Env::Default(), dir_);
    ASSERT_FALSE(index.ok()) << text.substr(0, 60);
    EXPECT_EQ(index.status().code(), absl::StatusCode::kDataLoss) << text.substr(0, 60);
    EXPECT_LT(index.status().message().size(), 600u);
  }
}

TEST_F(CheckpointBadInputTest, ShardFilesThatAreNotPlainFilesAreRefused) {
  const std::string shard = ShardFile();
  // A symlink to a file of exactly the expected size and contents outside the checkpoint.
  std::filesystem::rename(shard, root_ + "/moved.shard");
  std::filesystem::create_symlink(root_ + "/moved.shard", shard);
  absl::StatusOr<Tensor> t = Read();
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("is a symlink"));
  std::filesystem::remove(shard);
  ASSERT_EQ(::mkfifo(shard.c_str(), 0600), 0);  // reading it would wait for a writer forever
  t = Read();
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("not a regular file"));
  std::filesystem::remove(shard);
  std::filesystem::create_directory(shard);
  EXPECT_FALSE(Read().ok());
  std::filesystem::remove(shard);
  std::filesystem::copy_file(root_ + "/moved.shard", shard);
  EXPECT_TRUE(Read().ok());
  // The index itself as a symlink.
  std::filesystem::rename(dir_ + "/index.json", root_ + "/index.json");
  std::filesystem::create_symlink(root_ + "/index.json", dir_ + "/index.json");
  EXPECT_EQ(ReadCheckpointIndex(Env::Default(), dir_).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(CheckpointBadInputTest, WrongSizedFilesAndBudgetsStopBeforeAllocating) {
  const std::string shard = ShardFile();
  // A sparse file of 1 TiB in place of the 80-byte shard: refused by its size, never read.
  ASSERT_EQ(::truncate(shard.c_str(), int64_t{1} << 40), 0);
  absl::StatusOr<Tensor> t = Read();
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("holds 1099511627776 bytes, expected 80"));
  ASSERT_EQ(::truncate(shard.c_str(), 40), 0);
  t = Read();
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("holds 40 bytes, expected 80"));
  ASSERT_EQ(::truncate(shard.c_str(), 80), 0);
  t = Read();  // the right size, the wrong bytes
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("fails its checksum"));
  // A real 80-byte variable over a 64-byte budget.
  SetUp();
  t = Read(64);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(t.status().message()), AnyOf(HasSubstr("--memory_budget_bytes"), HasSubstr("budget")));
  EXPECT_TRUE(Read(80).ok());
}

}  // namespace
}  // namespace pstrain
