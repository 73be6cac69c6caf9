// PsServer with dynamic table shards, in process: pulls of missing keys, pushes that make rows,
// keys split by owner over shards, checkpoints restored onto another shard count, expiry on push,
// stats, and refused requests.
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "common/plan/dynamic_key_owner.h"
#include "ps/store/dynamic_row_initializer.h"
#include "ps/store/ps_server.h"
#include "tests/ps/ps_test_util.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::IdBytes;
using testing_util::Sgd;

constexpr int64_t kDim = 4;
constexpr uint64_t kSeed = 7;
const char kTable[] = "ctr/emb";

InitializerProto Uniform() {
  InitializerProto init;
  init.set_type("random_uniform");
  init.set_minval(-1);
  init.set_maxval(1);
  return init;
}

DynamicShardSpecProto DynSpec(int index, int count) {
  DynamicShardSpecProto s;
  s.set_shard_name(absl::StrCat("emb/dyn_", index, "_of_", count));
  s.set_table_name(kTable);
  s.set_dim(kDim);
  *s.mutable_initializer() = Uniform();
  s.set_seed(kSeed);
  s.set_shard_index(index);
  s.set_num_shards(count);
  return s;
}

CreateShardsRequest CreateDyn(std::vector<DynamicShardSpecProto> specs, OptimizerProto optimizer = Sgd(1.0)) {
  CreateShardsRequest r;
  r.set_protocol_version(kProtocolVersion);
  for (auto& s : specs) *r.add_dynamic_shards() = std::move(s);
  *r.mutable_optimizer() = std::move(optimizer);
  r.set_mode(UPDATE_ASYNC);
  r.set_initialize(true);
  return r;
}

OptimizerProto Adagrad() {
  OptimizerProto o;
  o.set_type("adagrad");
  o.mutable_learning_rate()->set_initial(0.5);
  return o;
}

KeyedRows Keyed(const std::string& shard, const std::vector<int64_t>& keys, const std::vector<float>& values = {}) {
  KeyedRows r;
  r.set_shard_name(shard);
  r.set_num_keys(static_cast<int64_t>(keys.size()));
  r.set_keys(IdBytes(keys));
  r.set_values(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return r;
}

std::vector<float> Floats(const KeyedRows& r) {
  std::vector<float> v(r.values().size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), r.values().data(), r.values().size());
  return v;
}

// The initializer's row of `key`, computed apart from the ps.
std::vector<float> InitialRow(int64_t key) {
  absl::StatusOr<DynamicRowInitializer> init = DynamicRowInitializer::Create(Uniform(), kSeed, kTable, kDim);
  EXPECT_TRUE(init.ok()) << init.status();
  std::vector<float> row(kDim);
  init->Fill(key, absl::MakeSpan(row));
  return row;
}

// One ps holding shard `index` of `count` (or every shard in `indices`).
struct Ps {
  explicit Ps(std::vector<int> indices, int count, OptimizerProto optimizer = Sgd(1.0)) : server(PsServer::Options()) {
    std::vector<DynamicShardSpecProto> specs;
    for (int i : indices) specs.push_back(DynSpec(i, count));
    CreateShardsResponse r;
    status = server.CreateShards(CreateDyn(specs, optimizer), &r);
  }
  absl::StatusOr<std::vector<float>> Pull(const std::string& shard, const std::vector<int64_t>& keys) {
    PullKeysRequest req;
    *req.add_tables() = Keyed(shard, keys);
    PullKeysResponse resp;
    absl::Status s = server.PullKeys(req, &resp);
    if (!s.ok()) return s;
    return Floats(resp.tables(0));
  }
  absl::Status Push(const std::string& shard, const std::vector<int64_t>& keys, const std::vector<float>& grads,
                    int64_t step = 1) {
    PushKeysRequest req;
    req.set_step(step);
    *req.add_tables() = Keyed(shard, keys, grads);
    PushKeysResponse resp;
    return server.PushKeys(req, &resp);
  }
  DynamicShardStats Stats(const std::string& shard) {
    PsStatsResponse resp;
    EXPECT_TRUE(server.GetStats(PsStatsRequest(), &resp).ok());
    for (const DynamicShardStats& s : resp.dynamic_shards()) {
      if (s.name() == shard) return s;
    }
    ADD_FAILURE() << "no stats of " << shard;
    return DynamicShardStats();
  }
  PsServer server;
  absl::Status status;
};

std::vector<float> Grad(float v) { return std::vector<float>(kDim, v); }

TEST(DynamicPsServerTest, PullOfMissingKeyGivesInitializerRowAndStoresNothing) {
  Ps ps({0}, 1);
  ASSERT_TRUE(ps.status.ok()) << ps.status;
  const std::string shard = DynSpec(0, 1).shard_name();
  absl::StatusOr<std::vector<float>> got = ps.Pull(shard, {42, -9});
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<float> want = InitialRow(42);
  const std::vector<float> second = InitialRow(-9);
  want.insert(want.end(), second.begin(), second.end());
  EXPECT_EQ(*got, want);
  EXPECT_NE(InitialRow(42), second);  // rows differ per key
  const DynamicShardStats stats = ps.Stats(shard);
  EXPECT_EQ(stats.rows(), 0);
  EXPECT_EQ(stats.lookups(), 2);
  EXPECT_EQ(stats.lookups_missing(), 2);
  EXPECT_EQ(stats.pulls(), 1);
}

TEST(DynamicPsServerTest, PushCreatesRowsAndAdds) {
  Ps ps({0}, 1);
  ASSERT_TRUE(ps.status.ok()) << ps.status;
  const std::string shard = DynSpec(0, 1).shard_name();
  // Key 5 twice in one push (summed), then once more: SGD at rate 1 subtracts 1 + 2 + 4.
  std::vector<float> grads = Grad(1);
  const std::vector<float> g2 = Grad(2);
  grads.insert(grads.end(), g2.begin(), g2.end());
  ASSERT_TRUE(ps.Push(shard, {5, 5}, grads).ok());
  ASSERT_TRUE(ps.Push(shard, {5}, Grad(4), 2).ok());
  absl::StatusOr<std::vector<float>> got = ps.Pull(shard, {5, 6});
  ASSERT_TRUE(got.ok()) << got.status();
  const std::vector<float> init5 = InitialRow(5), init6 = InitialRow(6);
  for (int j = 0; j < kDim; ++j) {
    EXPECT_FLOAT_EQ((*got)[j], init5[j] - 7.0f) << j;
    EXPECT_EQ((*got)[kDim + j], init6[j]) << j;  // never pushed: the initializer's row
  }
  const DynamicShardStats stats = ps.Stats(shard);
  EXPECT_EQ(stats.rows(), 1);
  EXPECT_EQ(stats.created(), 1);
  EXPECT_EQ(stats.pushes(), 2);
  EXPECT_GT(stats.memory_bytes(), 0);
}

TEST(DynamicPsServerTest, TwoShardsSplitKeysByOwner) {
  Ps ps0({0}, 2), ps1({1}, 2);
  ASSERT_TRUE(ps0.status.ok() && ps1.status.ok());
  Ps* by_owner[2] = {&ps0, &ps1};
  std::vector<int64_t> owned[2];
  for (int64_t key = 0; key < 100; ++key) owned[DynamicKeyOwner(static_cast<uint64_t>(key), 2)].push_back(key);
  ASSERT_FALSE(owned[0].empty());
  ASSERT_FALSE(owned[1].empty());
  for (int i = 0; i < 2; ++i) {
    const std::string shard = DynSpec(i, 2).shard_name();
    ASSERT_TRUE(by_owner[i]->Push(shard, owned[i], std::vector<float>(owned[i].size() * kDim, 0.5f)).ok());
    EXPECT_EQ(by_owner[i]->Stats(shard).rows(), static_cast<int64_t>(owned[i].size()));
    // The other shard's key is refused, naming its owner.
    const int64_t foreign = owned[1 - i][0];
    absl::Status s = by_owner[i]->Push(shard, {foreign}, Grad(1));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("does not own key ", foreign, ": shard ", 1 - i, " does")));
    EXPECT_FALSE(by_owner[i]->Pull(shard, {foreign}).ok());
  }
}

class DynamicPsCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("pstrain_dynps_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  RestoreRequest RestoreOf(std::vector<int> indices, int count) {
    RestoreRequest r;
    r.set_checkpoint_dir(dir_.string());
    for (int i : indices) *r.add_dynamic_shards() = DynSpec(i, count);
    *r.mutable_optimizer() = Adagrad();
    r.set_mode(UPDATE_ASYNC);
    return r;
  }

  std::filesystem::path dir_;
};

TEST_F(DynamicPsCheckpointTest, RestoreOntoAnotherShardCountKeepsRowsAndSlots) {
  // Two ps tasks, one shard each, Adagrad (a slot per row), keys 0..59 pushed twice.
  std::vector<std::unique_ptr<Ps>> before;
  for (int i = 0; i < 2; ++i) before.push_back(std::make_unique<Ps>(std::vector<int>{i}, 2, Adagrad()));
  std::vector<int64_t> keys;
  for (int64_t k = 0; k < 60; ++k) keys.push_back(k * 1000003);
  auto route = [&](int count) {
    std::vector<std::vector<int64_t>> by(count);
    for (int64_t k : keys) by[DynamicKeyOwner(static_cast<uint64_t>(k), count)].push_back(k);
    return by;
  };
  const auto two = route(2);
  for (int step = 1; step <= 2; ++step) {
    for (int i = 0; i < 2; ++i) {
      std::vector<float> g(two[i].size() * kDim);
      for (size_t j = 0; j < g.size(); ++j) g[j] = 0.01f * static_cast<float>(j % 7) - 0.02f * step;
      ASSERT_TRUE(before[i]->Push(DynSpec(i, 2).shard_name(), two[i], g, step).ok());
    }
  }
  std::map<int64_t, std::vector<float>> saved_rows;
  for (int i = 0; i < 2; ++i) {
    SaveRequest save;
    save.set_checkpoint_dir(dir_.string());
    SaveResponse resp;
    ASSERT_TRUE(before[i]->server.Save(save, &resp).ok());
    ASSERT_EQ(resp.dynamic_shards_size(), 1);
    EXPECT_EQ(resp.dynamic_shards(0).file(), DynamicShardFileName(kTable, i, 2));
    EXPECT_EQ(resp.dynamic_shards(0).rows(), static_cast<int64_t>(two[i].size()));
    absl::StatusOr<std::vector<float>> rows = before[i]->Pull(DynSpec(i, 2).shard_name(), two[i]);
    ASSERT_TRUE(rows.ok());
    for (size_t j = 0; j < two[i].size(); ++j) {
      saved_rows[two[i][j]] = std::vector<float>(rows->begin() + j * kDim, rows->begin() + (j + 1) * kDim);
    }
  }
  EXPECT_TRUE(std::filesystem::exists(dir_ / "dynamic-ctr%2Femb-0-of-2.dtab"));

  // Three ps tasks restore it: every key's row is back on its new owner, and one more push gives
  // the same row on both layouts (so the Adagrad accumulators came back too).
  const auto three = route(3);
  int64_t total_rows = 0;
  for (int i = 0; i < 3; ++i) {
    Ps after({}, 3, Adagrad());
    RestoreResponse r;
    ASSERT_TRUE(after.server.Restore(RestoreOf({i}, 3), &r).ok());
    const std::string shard = DynSpec(i, 3).shard_name();
    total_rows += after.Stats(shard).rows();
    absl::StatusOr<std::vector<float>> rows = after.Pull(shard, three[i]);
    ASSERT_TRUE(rows.ok()) << rows.status();
    for (size_t j = 0; j < three[i].size(); ++j) {
      EXPECT_EQ(std::vector<float>(rows->begin() + j * kDim, rows->begin() + (j + 1) * kDim), saved_rows[three[i][j]])
          << "key " << three[i][j];
    }
    if (three[i].empty()) continue;
    const int64_t key = three[i][0];
    const int old_owner = DynamicKeyOwner(static_cast<uint64_t>(key), 2);
    ASSERT_TRUE(after.Push(shard, {key}, Grad(0.3f), 3).ok());
    ASSERT_TRUE(before[old_owner]->Push(DynSpec(old_owner, 2).shard_name(), {key}, Grad(0.3f), 3).ok());
    EXPECT_EQ(*after.Pull(shard, {key}), *before[old_owner]->Pull(DynSpec(old_owner, 2).shard_name(), {key}));
  }
  EXPECT_EQ(total_rows, static_cast<int64_t>(keys.size()));
}

TEST_F(DynamicPsCheckpointTest, RestoreNamesMissingFiles) {
  Ps ps({0}, 2, Adagrad());
  SaveRequest save;
  save.set_checkpoint_dir(dir_.string());
  SaveResponse resp;
  ASSERT_TRUE(ps.server.Save(save, &resp).ok());  // shard 1 of 2 never saved
  Ps after({}, 1, Adagrad());
  RestoreResponse r;
  absl::Status s = after.server.Restore(RestoreOf({0}, 1), &r);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(DynamicShardFileName(kTable, 1, 2)));

  std::filesystem::remove(dir_ / DynamicShardFileName(kTable, 0, 2));
  s = after.server.Restore(RestoreOf({0}, 1), &r);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("holds no file of dynamic table ctr/emb"));
}

TEST(DynamicPsServerTest, PushExpiresRowsPastTtl) {
  PsServer server{PsServer::Options()};
  DynamicShardSpecProto spec = DynSpec(0, 1);
  spec.set_ttl_steps(5);
  CreateShardsResponse cr;
  ASSERT_TRUE(server.CreateShards(CreateDyn({spec}), &cr).ok());
  auto push = [&](int64_t key, int64_t step) {
    PushKeysRequest req;
    req.set_step(step);
    *req.add_tables() = Keyed(spec.shard_name(), {key}, Grad(1));
    PushKeysResponse resp;
    EXPECT_TRUE(server.PushKeys(req, &resp).ok());
    return resp.rows(0);
  };
  EXPECT_EQ(push(1, 1), 1);
  EXPECT_EQ(push(2, 6), 2);  // 6 - 1 = 5: key 1 stays
  EXPECT_EQ(push(3, 7), 2);  // 7 - 1 > 5: key 1 expires
  PsStatsResponse stats;
  ASSERT_TRUE(server.GetStats(PsStatsRequest(), &stats).ok());
  ASSERT_EQ(stats.dynamic_shards_size(), 1);
  EXPECT_EQ(stats.dynamic_shards(0).evicted_ttl(), 1);
  EXPECT_EQ(stats.dynamic_shards(0).rows(), 2);
}

TEST(DynamicPsServerTest, BadRequestsAreRefusedNamingTheProblem) {
  Ps ps({0}, 1);
  ASSERT_TRUE(ps.status.ok());
  const std::string shard = DynSpec(0, 1).shard_name();
  ASSERT_TRUE(ps.Push(shard, {1}, Grad(1)).ok());
  const std::vector<float> row_before = *ps.Pull(shard, {1});

  absl::StatusOr<std::vector<float>> pulled = ps.Pull("nope", {1});
  EXPECT_EQ(pulled.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(pulled.status().message(), HasSubstr("no dynamic shard nope"));

  PullKeysRequest bad_pull;
  KeyedRows* entry = bad_pull.add_tables();
  *entry = Keyed(shard, {1, 2});
  entry->set_num_keys(3);
  PullKeysResponse pull_resp;
  absl::Status s = ps.server.PullKeys(bad_pull, &pull_resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("16 bytes of keys for num_keys 3"));
  entry->set_num_keys(2);
  entry->set_values("xxxx");
  EXPECT_THAT(ps.server.PullKeys(bad_pull, &pull_resp).message(), HasSubstr("keys only"));

  s = ps.Push(shard, {1}, std::vector<float>(kDim - 1, 1.0f));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("12 bytes of gradients for 1 keys of dim 4"));
  s = ps.Push(shard, {1}, Grad(1), -1);
  EXPECT_THAT(s.message(), HasSubstr("step -1 is negative"));

  // One shard named twice in a push.
  PushKeysRequest twice;
  twice.set_step(1);
  *twice.add_tables() = Keyed(shard, {1}, Grad(1));
  *twice.add_tables() = Keyed(shard, {2}, Grad(1));
  PushKeysResponse push_resp;
  EXPECT_THAT(ps.server.PushKeys(twice, &push_resp).message(), HasSubstr("named twice"));
  // A NaN in a push's second row: its first row is not applied either.
  PushKeysRequest nan_push;
  nan_push.set_step(1);
  std::vector<float> g = Grad(1);
  const std::vector<float> bad = Grad(NAN);
  g.insert(g.end(), bad.begin(), bad.end());
  *nan_push.add_tables() = Keyed(shard, {1, 2}, g);
  s = ps.server.PushKeys(nan_push, &push_resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("the gradient of key 2 is NaN or infinite"));
  EXPECT_EQ(*ps.Pull(shard, {1}), row_before);
  EXPECT_EQ(ps.Stats(shard).rows(), 1);

  // Creation: sync mode, a bad index, adam, and a name a dense shard holds.
  CreateShardsRequest sync = CreateDyn({DynSpec(0, 1)});
  sync.set_mode(UPDATE_SYNC);
  sync.set_num_workers(2);
  CreateShardsResponse cr;
  EXPECT_THAT(ps.server.CreateShards(sync, &cr).message(), HasSubstr("async mode only"));
  EXPECT_THAT(ps.server.CreateShards(CreateDyn({DynSpec(2, 2)}), &cr).message(),
              HasSubstr("shard_index 2 of num_shards 2"));
  OptimizerProto adam;
  adam.set_type("adam");
  s = ps.server.CreateShards(CreateDyn({DynSpec(0, 1)}, adam), &cr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("dynamic shard emb/dyn_0_of_1"));
  CreateShardsRequest clash = CreateDyn({DynSpec(0, 1)});
  *clash.add_shards() = testing_util::Spec("emb", {8, 4}, 0, 8);
  clash.mutable_shards(0)->set_shard_name(shard);
  EXPECT_THAT(ps.server.CreateShards(clash, &cr).message(), HasSubstr("has the name of a dynamic shard ps:0 holds"));
  clash.mutable_dynamic_shards(0)->set_shard_name("fresh");
  clash.mutable_shards(0)->set_shard_name("fresh");
  EXPECT_THAT(ps.server.CreateShards(clash, &cr).message(), HasSubstr("shard fresh is listed twice"));
  // None of the refused creations replaced the shard.
  EXPECT_EQ(ps.Stats(shard).rows(), 1);
}

}  // namespace
}  // namespace pstrain
