// Checkpoints of embedding tables: values and optimizer slots saved from any partitioning (div or
// mod, any shard and ps count) restore into any other, and read whole in global row order with no
// cluster; files are read in pieces, never whole.
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "common/checkpoint/checkpoint_index.h"
#include "common/checkpoint/checkpoint_reader.h"
#include "common/platform/env.h"
#include "common/wire/protocol_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "ps/store/ps_server.h"
#include "tests/ps/ps_test_util.h"
#include "tests/test_util/forwarding_env.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::RowFloats;
using testing_util::Rows;
using testing_util::TableShard;

constexpr int64_t kVocab = 23, kDim = 3;

OptimizerProto Adagrad() {
  OptimizerProto o;
  o.set_type("adagrad");
  o.mutable_learning_rate()->set_initial(0.3);
  return o;
}

// How a table is split: shard count, strategy, ps count.
struct Layout {
  int shards;
  bool mod;
  int ps;
};

std::vector<ShardSpecProto> TableShards(const Layout& l) {
  std::vector<ShardSpecProto> out;
  int64_t offset = 0;
  for (int i = 0; i < l.shards; ++i) {
    const int64_t rows = kVocab / l.shards + (i < kVocab % l.shards ? 1 : 0);
    ShardSpecProto s = TableShard("emb", kVocab, kDim, l.mod ? i : offset, rows, l.mod ? l.shards : 1,
                                  "emb/part_" + std::to_string(i));
    s.set_ps_task(i % l.ps);
    out.push_back(s);
    offset += rows;
  }
  return out;
}

// A table held by `layout.ps` servers.
struct Cluster {
  explicit Cluster(const Layout& layout) : layout(layout), shards(TableShards(layout)) {
    for (int p = 0; p < layout.ps; ++p) {
      servers.push_back(std::make_unique<PsServer>(PsServer::Options{"ps:" + std::to_string(p)}));
      clients.push_back(std::make_unique<LocalPsClient>(servers.back().get()));
    }
  }
  std::vector<ShardSpecProto> On(int p) const {
    std::vector<ShardSpecProto> out;
    for (const auto& s : shards) {
      if (s.ps_task() == p) out.push_back(s);
    }
    return out;
  }
  // Creates the shards, initialised, with Adagrad, then pushes the first two steps every test uses.
  void CreateAndTrain() {
    for (int p = 0; p < layout.ps; ++p) {
      CreateShardsRequest r = testing_util::CreateRequest(On(p), UPDATE_ASYNC, 1);
      *r.mutable_optimizer() = Adagrad();
      CreateShardsResponse created;
      EXPECT_TRUE(clients[p]->CreateShards(r, &created).ok());
    }
    Push({3, 7, 22, 0});
    Push({7, 11});
  }
  // Pushes the rows `ids` (gradient = 0.1 * (id + 1) on every element) to their owning shards.
  void Push(const std::vector<int64_t>& ids) {
    for (int p = 0; p < layout.ps; ++p) {
      PushRequest push;
      for (const ShardSpecProto& s : On(p)) {
        std::vector<int64_t> mine;
        std::vector<float> g;
        for (int64_t id : ids) {
          const int64_t d = id - s.row_offset();
          if (d >= 0 && d % s.row_stride() == 0 && d / s.row_stride() < s.rows()) {
            mine.push_back(id);
            g.insert(g.end(), kDim, 0.1f * static_cast<float>(id + 1));
          }
        }
        *push.add_sparse() = Rows(s.shard_name(), mine, g);
      }
      PushResponse pushed;
      ASSERT_TRUE(clients[p]->Push(push, &pushed).ok());
    }
  }
  // Every row in global order, and the versions seen.
  std::vector<float> Table(std::set<int64_t>* versions = nullptr) {
    std::vector<float> table(kVocab * kDim);
    for (int p = 0; p < layout.ps; ++p) {
      for (const ShardSpecProto& s : On(p)) {
        std::vector<int64_t> ids;
        for (int64_t j = 0; j < s.rows(); ++j) ids.push_back(s.row_offset() + j * s.row_stride());
        PullRequest pull;
        *pull.add_sparse() = Rows(s.shard_name(), ids);
        PullResponse got;
        EXPECT_TRUE(clients[p]->Pull(pull, &got).ok());
        const std::vector<float> rows = RowFloats(got.sparse(0));
        for (size_t j = 0; j < ids.size(); ++j) std::copy_n(&rows[j * kDim], kDim, &table[ids[j] * kDim]);
        if (versions != nullptr) versions->insert(got.sparse(0).version());
      }
    }
    return table;
  }

  Layout layout;
  std::vector<ShardSpecProto> shards;
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::unique_ptr<LocalPsClient>> clients;
};

class TableCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("pstrain_table_ckpt_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Creates `layout`, trains two pushes, saves into `dir` with the index; returns the table.
  std::vector<float> TrainAndSave(const Layout& layout, const std::string& dir) {
    Cluster c(layout);
    c.CreateAndTrain();
    CheckpointIndex index;
    index.global_step = 2;
    for (int p = 0; p < layout.ps; ++p) {
      SaveRequest save;
      save.set_checkpoint_dir(dir);
      SaveResponse saved;
      EXPECT_TRUE(c.clients[p]->Save(save, &saved).ok());
      index.shards.insert(index.shards.end(), saved.shards().begin(), saved.shards().end());
    }
    EXPECT_TRUE(WriteCheckpointIndex(Env::Default(), dir, index).ok());
    return c.Table();
  }

  // Restores `dir` into `layout` and returns the cluster.
  std::unique_ptr<Cluster> Restore(const Layout& layout, const std::string& dir) {
    auto c = std::make_unique<Cluster>(layout);
    for (int p = 0; p < layout.ps; ++p) {
      RestoreRequest r;
      r.set_checkpoint_dir(dir);
      for (const auto& s : c->On(p)) *r.add_shards() = s;
      *r.mutable_optimizer() = Adagrad();
      RestoreResponse restored;
      absl::Status s = c->clients[p]->Restore(r, &restored);
      EXPECT_TRUE(s.ok()) << s;
    }
    return c;
  }

  std::filesystem::path dir_;
};

TEST_F(TableCheckpointTest, RestoresIntoAnyStrategyShardAndPsCountWithItsSlots) {
  const Layout saved_as[] = {{2, false, 2}, {3, true, 2}};
  const Layout restored_as[] = {{3, true, 2}, {2, false, 3}, {1, false, 1}, {4, true, 3}};
  for (const Layout& from : saved_as) {
    const std::string dir = (dir_ / ("from" + std::to_string(from.shards))).string();
    const std::vector<float> table = TrainAndSave(from, dir);
    // The same two pushes on the original layout, then one more, give the reference.
    Cluster reference(from);
    reference.CreateAndTrain();
    reference.Push({7, 8});
    const std::vector<float> next = reference.Table();
    for (const Layout& to : restored_as) {
      auto c = Restore(to, dir);
      std::set<int64_t> versions;
      EXPECT_EQ(c->Table(&versions), table) << from.shards << " -> " << to.shards << (to.mod ? " mod" : " div");
      EXPECT_EQ(versions, std::set<int64_t>{2});
      // The accumulators came back: one more identical push lands where the original does.
      c->Push({7, 8});
      EXPECT_EQ(c->Table(), next) << from.shards << " -> " << to.shards << (to.mod ? " mod" : " div");
    }
  }
}

TEST_F(TableCheckpointTest, DivAndModCheckpointsReadBackIdenticallyInGlobalOrder) {
  const std::string div = (dir_ / "div").string(), mod = (dir_ / "mod").string();
  const std::vector<float> table = TrainAndSave({3, false, 2}, div);
  EXPECT_EQ(TrainAndSave({3, true, 2}, mod), table);  // the same values, whatever the layout
  for (const std::string& dir : {div, mod}) {
    auto index = ReadCheckpointIndex(Env::Default(), dir);
    ASSERT_TRUE(index.ok());
    CheckpointReader reader(Env::Default(), dir, &*index);
    EXPECT_TRUE(reader.VerifyAll().ok());
    auto whole = reader.ReadRows("emb", 0, -1, "");
    ASSERT_TRUE(whole.ok()) << whole.status();
    EXPECT_EQ(std::vector<float>(whole->flat().begin(), whole->flat().end()), table) << dir;
    auto middle = reader.ReadRows("emb", 5, 9, "accumulator");
    ASSERT_TRUE(middle.ok()) << middle.status();
    EXPECT_FLOAT_EQ(middle->flat()[(7 - 5) * kDim], 0.1f + 0.8f * 0.8f * 2);  // row 7 pushed twice
  }
}

// Overlapping or missing slices are found by VerifyAll and by reads.
TEST_F(TableCheckpointTest, SlicesThatOverlapOrLeaveAGapAreDataLoss) {
  const std::string dir = dir_.string();
  TrainAndSave({2, true, 1}, dir);
  auto index = ReadCheckpointIndex(Env::Default(), dir);
  ASSERT_TRUE(index.ok());
  CheckpointIndex overlapping = *index;
  overlapping.shards[1].set_row_offset(0);  // both slices claim the even rows
  CheckpointReader reader(Env::Default(), dir, &overlapping);
  absl::Status s = reader.VerifyAll();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("hold row"));
  EXPECT_EQ(reader.ReadRows("emb", 0, -1, "").status().code(), absl::StatusCode::kDataLoss);
  CheckpointIndex gap = *index;
  gap.shards.pop_back();
  CheckpointReader gap_reader(Env::Default(), dir, &gap);
  EXPECT_EQ(gap_reader.VerifyAll().code(), absl::StatusCode::kDataLoss);
  s = gap_reader.ReadRows("emb", 0, -1, "").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("hold at most 12 of the 23 rows asked for"));  // before allocating
}

// Records every read: files are read in pieces of bounded size, never whole.
class RecordingEnv : public ForwardingEnv {
 public:
  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    if (path.find(".shard") != std::string::npos) ++whole_shard_reads;
    return ForwardingEnv::ReadFile(path);
  }
  absl::Status ReadFileRange(const std::string& path, uint64_t offset, size_t n, char* dst) override {
    largest_read = std::max(largest_read, n);
    return ForwardingEnv::ReadFileRange(path, offset, n, dst);
  }

  int whole_shard_reads = 0;
  size_t largest_read = 0;
};

TEST_F(TableCheckpointTest, RestoreReadsFilesInBoundedPieces) {
  const std::string dir = dir_.string();
  TrainAndSave({2, false, 1}, dir);
  RecordingEnv env;
  PsServer::Options options{"ps:0"};
  options.env = &env;
  PsServer ps(options);
  LocalPsClient client(&ps);
  RestoreRequest r;
  r.set_checkpoint_dir(dir);
  for (const auto& s : TableShards({3, true, 1})) *r.add_shards() = s;
  *r.mutable_optimizer() = Adagrad();
  RestoreResponse restored;
  ASSERT_TRUE(client.Restore(r, &restored).ok());
  EXPECT_EQ(env.whole_shard_reads, 0);
  EXPECT_GT(env.largest_read, 0u);
  EXPECT_LE(env.largest_read, size_t{8} << 20);
}

}  // namespace
}  // namespace pstrain
