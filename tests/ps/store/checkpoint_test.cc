#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "common/checkpoint/checkpoint_index.h"
#include "common/platform/env.h"
#include "common/wire/protocol_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "ps/store/ps_server.h"
#include "tests/ps/ps_test_util.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::OnePull;
using testing_util::OnePush;
using testing_util::Spec;
using testing_util::ToFloats;

OptimizerProto Adam() {
  OptimizerProto o;
  o.set_type("adam");
  o.mutable_learning_rate()->set_initial(0.1);
  return o;
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("pstrain_ckpt_test_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Variable "w" [10,4] split in two shards on one ps (rows 0..5 and 5..10) plus scalar "b",
  // trained 3 async Adam steps, saved with the index written as the chief does.
  void TrainAndSave() {
    PsServer server(PsServer::Options{"ps:0"});
    LocalPsClient client(&server);
    CreateShardsRequest create;
    create.set_protocol_version(kProtocolVersion);
    *create.add_shards() = Spec("w", {10, 4}, 0, 5, "glorot_uniform", "w/part_0");
    *create.add_shards() = Spec("w", {10, 4}, 5, 5, "glorot_uniform", "w/part_1");
    *create.add_shards() = Spec("b", {}, 0, 1, "ones");
    *create.mutable_optimizer() = Adam();
    create.set_initialize(true);
    CreateShardsResponse created;
    ASSERT_TRUE(client.CreateShards(create, &created).ok());
    for (int step = 0; step < 3; ++step) {
      PushRequest push = OnePush("w/part_0", {5, 4}, std::vector<float>(20, 0.1f * (step + 1)));
      *push.add_gradients() = OnePush("w/part_1", {5, 4}, std::vector<float>(20, -0.2f)).gradients(0);
      *push.add_gradients() = OnePush("b", {}, {0.5f}).gradients(0);
      PushResponse pushed;
      ASSERT_TRUE(client.Push(push, &pushed).ok());
    }
    PullRequest pull;
    for (const char* n : {"w/part_0", "w/part_1", "b"}) pull.add_shard_names(n);
    PullResponse pulled;
    ASSERT_TRUE(client.Pull(pull, &pulled).ok());
    saved_w_ = ToFloats(pulled.values(0).value());
    std::vector<float> second = ToFloats(pulled.values(1).value());
    saved_w_.insert(saved_w_.end(), second.begin(), second.end());
    saved_b_ = ToFloats(pulled.values(2).value());
    SaveRequest save;
    save.set_checkpoint_dir(dir_.string());
    save.set_global_step(3);
    SaveResponse saved;
    ASSERT_TRUE(client.Save(save, &saved).ok());
    ASSERT_EQ(saved.shards_size(), 3);
    CheckpointIndex index;
    index.global_step = 3;
    index.job_spec_json = R"({"name":"test"})";
    index.shards.assign(saved.shards().begin(), saved.shards().end());
    ASSERT_TRUE(WriteCheckpointIndex(Env::Default(), dir_.string(), index).ok());
  }

  RestoreRequest RestoreOf(std::vector<ShardSpecProto> shards) {
    RestoreRequest r;
    r.set_checkpoint_dir(dir_.string());
    for (auto& s : shards) *r.add_shards() = s;
    *r.mutable_optimizer() = Adam();
    return r;
  }

  std::filesystem::path dir_;
  std::vector<float> saved_w_, saved_b_;
};

TEST_F(CheckpointTest, IndexRoundTrips) {
  TrainAndSave();
  auto index = ReadCheckpointIndex(Env::Default(), dir_.string());
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->global_step, 3);
  EXPECT_THAT(index->job_spec_json, HasSubstr("\"name\":\"test\""));
  ASSERT_EQ(index->shards.size(), 3u);
  EXPECT_EQ(index->shards[2].shard_name(), "w/part_1");
  EXPECT_EQ(index->shards[2].version(), 3);
  EXPECT_THAT(std::vector<std::string>(index->shards[2].slot_names().begin(), index->shards[2].slot_names().end()),
              ::testing::ElementsAre("m", "v"));
  auto all = ReadCheckpointRows(Env::Default(), dir_.string(), *index, "w", 0, -1);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->shape(), (std::vector<int64_t>{10, 4}));
  EXPECT_EQ(std::vector<float>(all->flat().begin(), all->flat().end()), saved_w_);
}

TEST_F(CheckpointTest, RestoresUnderADifferentPartitioningAndPsCount) {
  TrainAndSave();
  // Now three shards of w (rows 0..4, 4..7, 7..10) over two ps, b on the second.
  PsServer ps0(PsServer::Options{"ps:0"}), ps1(PsServer::Options{"ps:1"});
  LocalPsClient c0(&ps0), c1(&ps1);
  RestoreResponse restored;
  ASSERT_TRUE(c0.Restore(RestoreOf({Spec("w", {10, 4}, 0, 4, "zeros", "w/part_0"),
                                    Spec("w", {10, 4}, 7, 3, "zeros", "w/part_2")}),
                         &restored)
                  .ok());
  ASSERT_TRUE(
      c1.Restore(RestoreOf({Spec("w", {10, 4}, 4, 3, "zeros", "w/part_1"), Spec("b", {}, 0, 1)}), &restored).ok());
  PullResponse p0, p1, p2, pb;
  ASSERT_TRUE(c0.Pull(OnePull("w/part_0"), &p0).ok());
  ASSERT_TRUE(c1.Pull(OnePull("w/part_1"), &p1).ok());
  ASSERT_TRUE(c0.Pull(OnePull("w/part_2"), &p2).ok());
  ASSERT_TRUE(c1.Pull(OnePull("b"), &pb).ok());
  std::vector<float> w = ToFloats(p0.values(0).value());
  for (auto* p : {&p1, &p2}) {
    std::vector<float> part = ToFloats(p->values(0).value());
    w.insert(w.end(), part.begin(), part.end());
  }
  EXPECT_EQ(w, saved_w_);
  EXPECT_EQ(ToFloats(pb.values(0).value()), saved_b_);
  EXPECT_EQ(p1.values(0).version(), 3);

  // The optimizer state came back too: one more identical step from one ps and from the original
  // layout agree (Adam's m, v and step count all matter here).
  PsServer whole(PsServer::Options{"ps:9"});
  LocalPsClient cw(&whole);
  ASSERT_TRUE(cw.Restore(RestoreOf({Spec("w", {10, 4}, 0, 10, "zeros", "w")}), &restored).ok());
  std::vector<float> g(40, 0.3f);
  PushResponse pushed;
  ASSERT_TRUE(cw.Push(OnePush("w", {10, 4}, g), &pushed).ok());
  ASSERT_TRUE(c1.Push(OnePush("w/part_1", {3, 4}, std::vector<float>(12, 0.3f)), &pushed).ok());
  PullResponse after_whole, after_part;
  ASSERT_TRUE(cw.Pull(OnePull("w"), &after_whole).ok());
  ASSERT_TRUE(c1.Pull(OnePull("w/part_1"), &after_part).ok());
  std::vector<float> whole_rows = ToFloats(after_whole.values(0).value());
  EXPECT_EQ(std::vector<float>(whole_rows.begin() + 16, whole_rows.begin() + 28),
            ToFloats(after_part.values(0).value()));
  EXPECT_NE(whole_rows, saved_w_);
}

TEST_F(CheckpointTest, CorruptedFileIsDataLoss) {
  TrainAndSave();
  const std::filesystem::path file = dir_ / "w%2Fpart_1.shard";
  ASSERT_TRUE(std::filesystem::exists(file));
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(7);
    f.put('\x5a');
  }
  PsServer ps(PsServer::Options{"ps:0"});
  LocalPsClient c(&ps);
  RestoreResponse restored;
  absl::Status s = c.Restore(RestoreOf({Spec("w", {10, 4}, 0, 10, "zeros", "w")}), &restored);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("w%2Fpart_1.shard fails its checksum"));
  // Rows only from the intact slice still load.
  EXPECT_TRUE(c.Restore(RestoreOf({Spec("w", {10, 4}, 0, 5, "zeros", "w/part_0")}), &restored).ok());
  // A truncated file is DataLoss too.
  std::filesystem::resize_file(file, 10);
  s = c.Restore(RestoreOf({Spec("w", {10, 4}, 6, 2, "zeros", "x")}), &restored);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
}

TEST_F(CheckpointTest, MissingIndexVariableOrChangedShape) {
  PsServer ps(PsServer::Options{"ps:0"});
  LocalPsClient c(&ps);
  RestoreResponse restored;
  EXPECT_EQ(c.Restore(RestoreOf({Spec("w", {10, 4}, 0, 10)}), &restored).code(), absl::StatusCode::kNotFound);
  TrainAndSave();
  absl::Status s = c.Restore(RestoreOf({Spec("q", {10, 4}, 0, 10)}), &restored);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("variable q"));
  s = c.Restore(RestoreOf({Spec("w", {10, 5}, 0, 10)}), &restored);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  {
    std::ofstream f(dir_ / "index.json");
    f << "{not json";
  }
  EXPECT_EQ(ReadCheckpointIndex(Env::Default(), dir_.string()).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace pstrain
