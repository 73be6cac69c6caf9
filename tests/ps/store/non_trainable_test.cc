// Non-trainable shards (BatchNormalization's moving statistics): whatever the job's optimizer, a
// push is added as it is (no learning rate, no slots), in sync mode the workers' parts summed into
// one update; checkpoints hold them without slots and restore them.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

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

using testing_util::OnePull;
using testing_util::OnePush;
using testing_util::Spec;
using testing_util::ToFloats;

constexpr float kMomentum = 0.9f;

OptimizerProto Adagrad() {
  OptimizerProto o;
  o.set_type("adagrad");
  o.mutable_learning_rate()->set_initial(0.5);
  return o;
}

ShardSpecProto MovingMean() {
  ShardSpecProto s = Spec("bn/moving_mean", {3}, 0, 3, "zeros");
  s.set_non_trainable(true);
  return s;
}

std::vector<float> Pull(LocalPsClient& client, const std::string& shard) {
  PullResponse r;
  EXPECT_TRUE(client.Pull(OnePull(shard), &r).ok());
  return ToFloats(r.values(0).value());
}

// Worker `w`'s push for the moving mean: its half of the global batch, Keras's delta
// (batch mean - moving) * (1 - momentum), scaled by its share 1/2.
std::vector<float> Delta(const std::vector<float>& batch_mean, const std::vector<float>& moving) {
  std::vector<float> d(batch_mean.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = (batch_mean[i] - moving[i]) * (1 - kMomentum) * 0.5f;
  return d;
}

TEST(NonTrainableShardTest, SyncPushesAreAddedAsTheyAreWithAdagradConfigured) {
  PsServer server(PsServer::Options{"ps:0"});
  LocalPsClient client(&server);
  CreateShardsRequest create;
  create.set_protocol_version(kProtocolVersion);
  *create.add_shards() = Spec("w", {3}, 0, 3, "ones");
  *create.add_shards() = MovingMean();
  *create.mutable_optimizer() = Adagrad();
  create.set_mode(UPDATE_SYNC);
  create.set_num_workers(2);
  create.set_sync_timeout_ms(10000);
  create.set_initialize(true);
  CreateShardsResponse created;
  ASSERT_TRUE(client.CreateShards(create, &created).ok());

  // Per step and worker: the mean of its half of the batch.
  const std::vector<std::vector<std::vector<float>>> halves = {{{1, 2, 3}, {3, -2, 5}}, {{0, 4, 1}, {2, 0, -1}}};
  std::vector<double> keras(3, 0.0);  // Keras's rule on the whole batch
  for (int step = 0; step < 2; ++step) {
    const std::vector<float> moving = Pull(client, "bn/moving_mean");
    std::vector<absl::Status> results(2);
    std::vector<std::thread> workers;
    for (int w = 0; w < 2; ++w) {
      workers.emplace_back([&, w] {
        PushRequest push = OnePush("bn/moving_mean", {3}, Delta(halves[step][w], moving), w, step);
        *push.add_gradients() = OnePush("w", {3}, {1, 1, 1}).gradients(0);
        PushResponse r;
        results[w] = client.Push(push, &r);
      });
    }
    for (std::thread& t : workers) t.join();
    for (const absl::Status& s : results) ASSERT_TRUE(s.ok()) << s;
    for (int i = 0; i < 3; ++i) {
      const double batch_mean = (halves[step][0][i] + halves[step][1][i]) / 2.0;
      keras[i] = keras[i] * kMomentum + batch_mean * (1 - kMomentum);
    }
  }
  const std::vector<float> moving = Pull(client, "bn/moving_mean");
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(moving[i], keras[i], 1e-6) << i;
  // The trainable variable went through Adagrad (a += g^2 from 0.1; w -= lr * g / sqrt(a)).
  const float a1 = 0.1f + 4, a2 = a1 + 4;
  const float w = 1 - 0.5f * 2 / std::sqrt(a1) - 0.5f * 2 / std::sqrt(a2);
  for (float x : Pull(client, "w")) EXPECT_NEAR(x, w, 1e-5);

  // Checkpointed without optimizer slots, restored, and still added as is.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("pstrain_non_trainable_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  SaveRequest save;
  save.set_checkpoint_dir(dir.string());
  save.set_global_step(2);
  SaveResponse saved;
  ASSERT_TRUE(client.Save(save, &saved).ok());
  CheckpointIndex index;
  index.global_step = 2;
  index.job_spec_json = R"({"name":"test"})";
  for (const SavedShard& s : saved.shards()) {
    if (s.shard_name() == "bn/moving_mean") EXPECT_THAT(s.slot_names(), ::testing::IsEmpty());
    if (s.shard_name() == "w") EXPECT_THAT(s.slot_names(), ::testing::ElementsAre("accumulator"));
    index.shards.push_back(s);
  }
  ASSERT_TRUE(WriteCheckpointIndex(Env::Default(), dir.string(), index).ok());
  PsServer restored(PsServer::Options{"ps:0"});
  LocalPsClient client2(&restored);
  RestoreRequest restore;
  restore.set_checkpoint_dir(dir.string());
  *restore.add_shards() = MovingMean();
  *restore.mutable_optimizer() = Adagrad();
  RestoreResponse restored_response;
  ASSERT_TRUE(client2.Restore(restore, &restored_response).ok());
  EXPECT_EQ(Pull(client2, "bn/moving_mean"), moving);
  PushResponse r;
  ASSERT_TRUE(client2.Push(OnePush("bn/moving_mean", {3}, {1, -1, 0.5f}), &r).ok());
  const std::vector<float> after = Pull(client2, "bn/moving_mean");
  EXPECT_EQ(after, (std::vector<float>{moving[0] + 1, moving[1] - 1, moving[2] + 0.5f}));
  std::filesystem::remove_all(dir);
}

TEST(NonTrainableShardTest, ATableCannotBeNonTrainable) {
  PsServer server(PsServer::Options{"ps:0"});
  LocalPsClient client(&server);
  CreateShardsRequest create;
  create.set_protocol_version(kProtocolVersion);
  ShardSpecProto table = Spec("emb", {4, 2}, 0, 4);
  table.set_sparse(true);
  table.set_non_trainable(true);
  *create.add_shards() = table;
  *create.mutable_optimizer() = Adagrad();
  CreateShardsResponse created;
  const absl::Status s = client.CreateShards(create, &created);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("emb"));
}

}  // namespace
}  // namespace pstrain
