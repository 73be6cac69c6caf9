// Checkpoints holding dynamic table files (complete, incomplete, pruned, re-sharded on restore),
// `pstrain inspect` of them, and the index's dynamic_shards entries (old indexes, bad entries).
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "chief/checkpoint/checkpoint_manager.h"
#include "chief/checkpoint/initial_dynamic_tables.h"
#include "chief/coordinator/job_protos.h"
#include "chief/tool/inspect_command.h"
#include "common/checkpoint/dynamic_shard_files.h"
#include "common/plan/dynamic_shards.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "ps/client/ps_stats_format.h"
#include "ps/store/dynamic_table_state.h"
#include "tests/chief/checkpoint/dynamic_tables_fixture.h"

namespace pstrain {
namespace dynamic_tables_testing {
namespace {

using ::testing::HasSubstr;

TEST_F(DynamicCheckpointTest, TheIndexListsEveryTableFileAndPrunedCheckpointsTakeTheirs) {
  const std::string model_dir = TempDir("saved");
  Cluster cluster(2);
  Create(&cluster, Plan(2));
  CheckpointManager manager(env_, model_dir, /*keep=*/2, cluster.clients());
  cluster.PushKeys(Keys(0, 200), 1);
  ASSERT_TRUE(manager.Save(10, "{}").ok());
  const std::vector<int64_t> rows = cluster.Rows();
  ASSERT_EQ(rows[0] + rows[1], 200);
  ASSERT_GT(rows[0], 0);
  ASSERT_GT(rows[1], 0);

  absl::StatusOr<CheckpointIndex> index = ReadCheckpointIndex(env_, model_dir + "/ckpt-10");
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->dynamic_shards.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const SavedDynamicShard& s = index->dynamic_shards[static_cast<size_t>(i)];
    EXPECT_EQ(s.table_name(), kTable);
    EXPECT_EQ(s.shard_name(), DynamicShardName(kTable, i, 2));
    EXPECT_EQ(s.shard_index(), i);
    EXPECT_EQ(s.num_shards(), 2);
    EXPECT_EQ(s.file(), DynamicShardFileName(kTable, i, 2));
    EXPECT_EQ(s.rows(), rows[static_cast<size_t>(i)]);
    EXPECT_TRUE(std::filesystem::is_regular_file(model_dir + "/ckpt-10/" + s.file()));
  }
  absl::StatusOr<std::vector<SavedDynamicTableFiles>> tables = GroupDynamicShards(index->dynamic_shards);
  ASSERT_TRUE(tables.ok());
  ASSERT_EQ(tables->size(), 1u);
  EXPECT_EQ((*tables)[0].rows, 200);
  EXPECT_TRUE(CheckpointManager::Verify(env_, model_dir + "/ckpt-10", *index).ok());

  // keep=2: the third save removes ckpt-10 and its table files with it.
  cluster.PushKeys(Keys(200, 50), 2);
  ASSERT_TRUE(manager.Save(20, "{}").ok());
  ASSERT_TRUE(manager.Save(30, "{}").ok());
  EXPECT_FALSE(std::filesystem::exists(model_dir + "/ckpt-10"));
  for (const std::string& f : DtabFilesUnder(model_dir)) EXPECT_THAT(f, ::testing::Not(HasSubstr("/ckpt-10/")));
  EXPECT_EQ(DtabFilesUnder(model_dir).size(), 4u);  // two checkpoints of two shards
  absl::StatusOr<CheckpointIndex> latest = ReadCheckpointIndex(env_, model_dir + "/ckpt-30");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->dynamic_shards[0].rows() + latest->dynamic_shards[1].rows(), 250);
}

TEST_F(DynamicCheckpointTest, ACheckpointMissingOrCorruptingATableFileIsNotComplete) {
  const std::string model_dir = TempDir("incomplete");
  Cluster cluster(2);
  Create(&cluster, Plan(2));
  CheckpointManager manager(env_, model_dir, 5, cluster.clients());
  cluster.PushKeys(Keys(0, 100), 1);
  ASSERT_TRUE(manager.Save(10, "{}").ok());
  ASSERT_TRUE(manager.Save(20, "{}").ok());
  ASSERT_TRUE(manager.Save(30, "{}").ok());
  std::filesystem::remove(model_dir + "/ckpt-30/" + DynamicShardFileName(kTable, 1, 2));
  {  // ckpt-20: one flipped byte in the middle of a table file
    const std::string path = model_dir + "/ckpt-20/" + DynamicShardFileName(kTable, 0, 2);
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(path) / 2));
    f.put('\x5a');
  }
  std::vector<std::string> warnings;
  absl::StatusOr<std::optional<FoundCheckpoint>> found = manager.FindLatest(&warnings, /*remove_incomplete=*/false);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->dir, model_dir + "/ckpt-10");
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_THAT(warnings[0], HasSubstr(DynamicShardFileName(kTable, 1, 2) + " is missing"));
  EXPECT_THAT(warnings[1], HasSubstr("fails its checksum"));

  // An index listing shard 0 of 2 only (a ps that did not save its shard) is incomplete too.
  absl::StatusOr<CheckpointIndex> index = ReadCheckpointIndex(env_, model_dir + "/ckpt-10");
  ASSERT_TRUE(index.ok());
  index->dynamic_shards.pop_back();
  absl::Status s = CheckpointManager::Verify(env_, model_dir + "/ckpt-10", *index);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("lacks shard 1 of 2"));
}

TEST_F(DynamicCheckpointTest, ASaveWithoutEveryShardOfATableIsNeverCommitted) {
  const std::string model_dir = TempDir("partial_save");
  Cluster cluster(2);
  const VariablePlanProto plan = Plan(2);
  Create(&cluster, plan);
  // A third ps holds a shard of the table as if it were one of 3: the table's shard counts disagree.
  Cluster odd(1);
  CreateShardsRequest request = *MakeCreateShardsRequest(Spec(), Plan(3), 2, 3, true);
  request.clear_shards();
  CreateShardsResponse created;
  ASSERT_TRUE(odd.ps(0)->CreateShards(request, &created).ok());
  std::vector<PsClient*> ps = cluster.clients();
  ps.push_back(odd.ps(0));
  CheckpointManager manager(env_, model_dir, 5, ps);
  absl::StatusOr<std::string> saved = manager.Save(10, "{}");
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(saved.status().message(), HasSubstr(kTable));
  EXPECT_TRUE(DtabFilesUnder(model_dir).empty());  // the temporary directory is gone with them

  // Only one ps of two answering for the table (the other holds the dense shard alone).
  Cluster half(2);
  CreateShardsRequest with = *MakeCreateShardsRequest(Spec(), plan, 0, 2, true);
  CreateShardsRequest without = *MakeCreateShardsRequest(Spec(), plan, 1, 2, true);
  without.clear_dynamic_shards();
  ASSERT_TRUE(half.ps(0)->CreateShards(with, &created).ok());
  ASSERT_TRUE(half.ps(1)->CreateShards(without, &created).ok());
  CheckpointManager half_manager(env_, model_dir, 5, half.clients());
  saved = half_manager.Save(20, "{}");
  ASSERT_FALSE(saved.ok());
  EXPECT_THAT(saved.status().message(), HasSubstr("lacks shard 1 of 2"));
  EXPECT_FALSE(std::filesystem::exists(model_dir + "/ckpt-20"));
}

TEST_F(DynamicCheckpointTest, ACheckpointOfTwoPsRestoresOntoThree) {
  const std::string model_dir = TempDir("reshard");
  Cluster two(2);
  Create(&two, Plan(2));
  two.PushKeys(Keys(0, 300), 3);
  CheckpointManager manager(env_, model_dir, 2, two.clients());
  absl::StatusOr<std::string> dir = manager.Save(10, "{}");
  ASSERT_TRUE(dir.ok()) << dir.status();

  Cluster three(3);
  const VariablePlanProto plan3 = Plan(3);
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<RestoreRequest> request = MakeRestoreRequest(Spec(), plan3, i, 1, *dir);
    ASSERT_TRUE(request.ok()) << request.status();
    RestoreResponse restored;
    absl::Status s = three.ps(i)->Restore(*request, &restored);
    ASSERT_TRUE(s.ok()) << s;
  }
  const std::vector<int64_t> rows = three.Rows();
  EXPECT_EQ(rows[0] + rows[1] + rows[2], 300);
  for (int64_t r : rows) EXPECT_GT(r, 0);
  // Its next checkpoint holds the table in three files.
  CheckpointManager manager3(env_, model_dir, 2, three.clients());
  ASSERT_TRUE(manager3.Save(20, "{}").ok());
  absl::StatusOr<CheckpointIndex> index = ReadCheckpointIndex(env_, model_dir + "/ckpt-20");
  ASSERT_TRUE(index.ok());
  ASSERT_EQ(index->dynamic_shards.size(), 3u);
  int64_t total = 0;
  for (const SavedDynamicShard& s : index->dynamic_shards) {
    EXPECT_EQ(s.num_shards(), 3);
    total += s.rows();
  }
  EXPECT_EQ(total, 300);
  // The summary's ps counters carry each ps's dynamic shard.
  PsStatsResponse stats;
  ASSERT_TRUE(three.ps(1)->GetStats(PsStatsRequest(), &stats).ok());
  const nlohmann::json json = PsStatsToJson("ps:1", stats);
  ASSERT_EQ(json["dynamic_shards"].size(), 1u);
  EXPECT_EQ(json["dynamic_shards"][0]["name"], DynamicShardName(kTable, 1, 3));
  EXPECT_EQ(json["dynamic_shards"][0]["rows"], rows[1]);
}

// --init_from's starting rows: a checkpoint the chief writes itself (SaveValues) with the table as
// one file of given keys and rows (InitialDynamicTableState, Adagrad's slot at its initial value)
// restores onto 2 ps, each holding the keys it owns with exactly those rows. Without the file
// listed, SaveValues refuses the dynamic table.
TEST_F(DynamicCheckpointTest, StartingRowsWrittenByTheChiefRestoreOntoAnyPsCount) {
  const std::string model_dir = TempDir("initial");
  const std::vector<int64_t> keys = Keys(0, 50);
  std::vector<float> values;
  for (size_t i = 0; i < keys.size() * kDim; ++i) values.push_back(0.01f * static_cast<float>(i) - 1.f);
  absl::StatusOr<DynamicTableState> state = InitialDynamicTableState(kTable, kDim, {0.1f}, keys, values);
  ASSERT_TRUE(state.ok()) << state.status();
  FloatTensorMap dense;
  dense["dense/kernel"].shape = {6, 2};
  dense["dense/kernel"].values.assign(12, 0.5f);
  const SavedDynamicShard entry = OneFileDynamicShard(kTable, 50);
  CheckpointManager manager(env_, model_dir, 2, {});
  EXPECT_THAT(std::string(manager.SaveValues(0, "{}", Plan(2), dense).status().message()),
              HasSubstr("dynamic table user/embeddings takes no starting values"));
  absl::StatusOr<std::string> dir =
      manager.SaveValues(0, "{}", Plan(2), dense, {{entry.file(), EncodeDynamicTableState(*state)}}, {entry});
  ASSERT_TRUE(dir.ok()) << dir.status();

  Cluster two(2);
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<RestoreRequest> request = MakeRestoreRequest(Spec(), Plan(2), i, 1, *dir);
    ASSERT_TRUE(request.ok()) << request.status();
    RestoreResponse restored;
    absl::Status s = two.ps(i)->Restore(*request, &restored);
    ASSERT_TRUE(s.ok()) << s;
  }
  const std::vector<int64_t> rows = two.Rows();
  EXPECT_EQ(rows[0] + rows[1], 50);
  for (int i = 0; i < 2; ++i) {
    std::vector<int64_t> mine;
    std::vector<float> want;
    for (size_t k = 0; k < keys.size(); ++k) {
      if (DynamicKeyOwner(static_cast<uint64_t>(keys[k]), 2) != i) continue;
      mine.push_back(keys[k]);
      want.insert(want.end(), values.begin() + k * kDim, values.begin() + (k + 1) * kDim);
    }
    EXPECT_EQ(rows[i], static_cast<int64_t>(mine.size()));
    PullKeysRequest request;
    KeyedRows* asked = request.add_tables();
    asked->set_shard_name(DynamicShardName(kTable, i, 2));
    asked->set_num_keys(static_cast<int64_t>(mine.size()));
    asked->set_keys(std::string(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(int64_t)));
    PullKeysResponse pulled;
    ASSERT_TRUE(two.ps(i)->PullKeys(request, &pulled).ok());
    ASSERT_EQ(pulled.tables(0).values().size(), want.size() * sizeof(float));
    std::vector<float> got(want.size());
    std::memcpy(got.data(), pulled.tables(0).values().data(), pulled.tables(0).values().size());
    EXPECT_EQ(got, want) << "ps " << i;
  }
}

TEST_F(DynamicCheckpointTest, InspectListsEachTableWithItsFilesAndOptions) {
  const std::string model_dir = TempDir("inspect");
  Cluster cluster(2);
  Create(&cluster, Plan(2));
  cluster.PushKeys(Keys(0, 120), 1);
  CheckpointManager manager(env_, model_dir, 2, cluster.clients());
  const std::string spec = R"({"model": {"fields": [{"name": "user", "embedding_dim": 4,
                                                     "dynamic": {"max_rows": 3000, "ttl_steps": 50}}]}})";
  absl::StatusOr<std::string> dir = manager.Save(10, spec);
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::vector<int64_t> rows = cluster.Rows();

  std::vector<std::string> args = {"pstrain", "inspect", "--checkpoint=" + *dir, "--format=json"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  const int rc = InspectMain(env_, static_cast<int>(argv.size()), argv.data());
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0) << out;
  const nlohmann::json j = nlohmann::json::parse(out);
  ASSERT_EQ(j["dynamic_tables"].size(), 1u) << out;
  const nlohmann::json& t = j["dynamic_tables"][0];
  EXPECT_EQ(t["name"], kTable);
  EXPECT_EQ(t["dim"], kDim);
  EXPECT_EQ(t["shards"], 2);
  EXPECT_EQ(t["rows"], 120);
  EXPECT_EQ(t["created"], 120);
  EXPECT_EQ(t["slots"], 1);  // adagrad's accumulator
  ASSERT_EQ(t["files"].size(), 2u);
  int64_t bytes = 0;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(t["files"][i]["file"], DynamicShardFileName(kTable, i, 2));
    EXPECT_EQ(t["files"][i]["rows"], rows[static_cast<size_t>(i)]);
    EXPECT_EQ(t["files"][i]["bytes"], std::filesystem::file_size(*dir + "/" + DynamicShardFileName(kTable, i, 2)));
    bytes += t["files"][i]["bytes"].get<int64_t>();
  }
  EXPECT_EQ(t["bytes"], bytes);
  EXPECT_EQ(t["options"]["max_rows"], 3000);
  EXPECT_EQ(t["options"]["ttl_steps"], 50);
  for (const auto& v : j["variables"]) EXPECT_NE(v["name"], kTable);
}

// index.json written directly: older indexes (no dynamic_shards) read as before; bad entries are
// DataLoss naming the entry.
class DynamicIndexTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const nlohmann::json& doc) {
    const std::string dir = TempDir(name);
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/index.json") << doc.dump();
    return dir;
  }
  static nlohmann::json Doc() {
    return {{"format", "pstrain-checkpoint-1"}, {"global_step", 5}, {"shards", nlohmann::json::array()}};
  }
  static nlohmann::json Entry() {
    return {{"shard_name", "t/dyn_0_of_2"},    {"table_name", "t"}, {"shard_index", 0}, {"num_shards", 2},
            {"file", "dynamic-t-0-of-2.dtab"}, {"rows", 7}};
  }
};

TEST_F(DynamicIndexTest, AnIndexWithoutDynamicShardsReadsAsNone) {
  absl::StatusOr<CheckpointIndex> index = ReadCheckpointIndex(Env::Default(), Write("old", Doc()));
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_TRUE(index->dynamic_shards.empty());
}

TEST_F(DynamicIndexTest, BadDynamicEntriesAreDataLossNamingThem) {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* problem;
  };
  const std::vector<Case> cases = {
      {"shard_index", 2, "dynamic_shards[0].shard_index is 2, not in [0, 1]"},
      {"shard_index", -1, "dynamic_shards[0].shard_index is -1"},
      {"num_shards", 0, "dynamic_shards[0].num_shards is 0"},
      {"rows", -3, "dynamic_shards[0].rows is -3"},
      {"file", "../elsewhere.dtab", "dynamic_shards[0].file"},
      {"table_name", "", "dynamic_shards[0].table_name is empty"},
      {"table_name", 5, "dynamic_shards[0].table_name must be a string"},
  };
  for (const Case& c : cases) {
    nlohmann::json doc = Doc();
    nlohmann::json entry = Entry();
    entry[c.key] = c.value;
    doc["dynamic_shards"] = nlohmann::json::array({entry});
    absl::StatusOr<CheckpointIndex> index = ReadCheckpointIndex(Env::Default(), Write("bad", doc));
    ASSERT_FALSE(index.ok()) << c.key;
    EXPECT_EQ(index.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(index.status().message(), HasSubstr(c.problem));
  }
  nlohmann::json doc = Doc();
  doc["dynamic_shards"] = "no";
  EXPECT_THAT(ReadCheckpointIndex(Env::Default(), Write("bad", doc)).status().message(),
              HasSubstr("dynamic_shards must be an array"));
}

TEST_F(DynamicIndexTest, AWrittenIndexReadsBackItsDynamicShards) {
  const std::string dir = TempDir("roundtrip");
  std::filesystem::create_directories(dir);
  CheckpointIndex index;
  index.global_step = 9;
  SavedDynamicShard s;
  s.set_shard_name("t/dyn_1_of_2");
  s.set_table_name("t");
  s.set_shard_index(1);
  s.set_num_shards(2);
  s.set_file("dynamic-t-1-of-2.dtab");
  s.set_rows(42);
  index.dynamic_shards.push_back(s);
  ASSERT_TRUE(WriteCheckpointIndex(Env::Default(), dir, index).ok());
  absl::StatusOr<CheckpointIndex> read = ReadCheckpointIndex(Env::Default(), dir);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->dynamic_shards.size(), 1u);
  EXPECT_EQ(read->dynamic_shards[0].SerializeAsString(), s.SerializeAsString());
}

}  // namespace
}  // namespace dynamic_tables_testing
}  // namespace pstrain
