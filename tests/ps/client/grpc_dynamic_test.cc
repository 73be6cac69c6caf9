// GrpcPsClient's PullKeys / PushKeys against a PsGrpcServer on 127.0.0.1: a dynamic table shard
// created, pulled and pushed by key over real gRPC, and a refusal carried back with its message.
#include <cstring>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/grpc_ps_client.h"
#include "ps/server/ps_grpc_server.h"
#include "common/plan/dynamic_key_owner.h"
#include "ps/store/dynamic_row_initializer.h"
#include "ps/store/ps_server.h"
#include "tests/ps/ps_test_util.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

KeyedRows Keyed(const std::string& shard, const std::vector<int64_t>& keys, const std::vector<float>& values = {}) {
  KeyedRows r;
  r.set_shard_name(shard);
  r.set_num_keys(static_cast<int64_t>(keys.size()));
  r.set_keys(testing_util::IdBytes(keys));
  r.set_values(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return r;
}

TEST(GrpcDynamicTableTest, PullAndPushByKeyOverGrpc) {
  PsServer ps{PsServer::Options()};
  absl::StatusOr<std::unique_ptr<PsGrpcServer>> server = PsGrpcServer::Start(&ps, "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  TransportConfig config;
  config.caller = "worker:0";
  GrpcPsClient client("127.0.0.1:" + std::to_string((*server)->port()), "ps:1", absl::Seconds(30), config);

  // Shard 1 of 2 of a table of dim 3, constant initializer 0.25, SGD at rate 1.
  DynamicShardSpecProto spec;
  spec.set_shard_name("emb/dyn_1_of_2");
  spec.set_table_name("emb");
  spec.set_dim(3);
  spec.mutable_initializer()->set_type("constant");
  spec.mutable_initializer()->set_value(0.25);
  spec.set_shard_index(1);
  spec.set_num_shards(2);
  CreateShardsRequest create;
  create.set_protocol_version(kProtocolVersion);
  *create.add_dynamic_shards() = spec;
  *create.mutable_optimizer() = testing_util::Sgd(1.0);
  create.set_initialize(true);
  CreateShardsResponse created;
  ASSERT_TRUE(client.CreateShards(create, &created).ok());

  std::vector<int64_t> mine, theirs;
  for (int64_t k = 1; k < 64 && (mine.size() < 2 || theirs.empty()); ++k) {
    (DynamicKeyOwner(static_cast<uint64_t>(k) << 40, 2) == 1 ? mine : theirs).push_back(k << 40);
  }
  ASSERT_EQ(mine.size(), 2u);
  ASSERT_FALSE(theirs.empty());

  PushKeysRequest push;
  push.set_step(1);
  *push.add_tables() = Keyed(spec.shard_name(), {mine[0]}, {1, 2, 3});
  PushKeysResponse pushed;
  ASSERT_TRUE(client.PushKeys(push, &pushed).ok());
  ASSERT_EQ(pushed.rows_size(), 1);
  EXPECT_EQ(pushed.rows(0), 1);

  PullKeysRequest pull;
  *pull.add_tables() = Keyed(spec.shard_name(), {mine[0], mine[1]});
  PullKeysResponse pulled;
  ASSERT_TRUE(client.PullKeys(pull, &pulled).ok());
  ASSERT_EQ(pulled.tables_size(), 1);
  ASSERT_EQ(pulled.tables(0).values().size(), 6 * sizeof(float));
  std::vector<float> rows(6);
  std::memcpy(rows.data(), pulled.tables(0).values().data(), pulled.tables(0).values().size());
  EXPECT_EQ(rows, (std::vector<float>{0.25f - 1, 0.25f - 2, 0.25f - 3, 0.25f, 0.25f, 0.25f}));

  PsStatsResponse stats;
  ASSERT_TRUE(client.GetStats(PsStatsRequest(), &stats).ok());
  ASSERT_EQ(stats.dynamic_shards_size(), 1);
  EXPECT_EQ(stats.dynamic_shards(0).rows(), 1);
  EXPECT_EQ(stats.dynamic_shards(0).lookups_missing(), 1);

  // A key of the other shard comes back as INVALID_ARGUMENT with the ps's message.
  PullKeysRequest wrong;
  *wrong.add_tables() = Keyed(spec.shard_name(), {theirs[0]});
  absl::Status s = client.PullKeys(wrong, &pulled);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("does not own key"));
  server->reset();  // stops serving before the PsServer goes
}

}  // namespace
}  // namespace pstrain
