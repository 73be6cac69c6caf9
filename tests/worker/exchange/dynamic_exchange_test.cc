// A worker's VariableExchange for a model with a dynamic embedding table and a dense variable over
// 1 and 3 real PsServer objects (LocalPsClient), the ps shards made from the plan as the chief makes
// them (DynamicShardSpecFromPlan): keys of any int64 value go to the shard that owns them, new keys
// pull the initializer's rows, a push then a pull gives the SGD-updated rows, PushKeys carry the
// dense version pulled as their step, a ps that fails names itself, and sync calls are refused.
// Also IdDeduper's ids of a dynamic table: no row range.
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/plan/dynamic_key_owner.h"
#include "common/plan/dynamic_shards.h"
#include "common/plan/model_variables.h"
#include "common/plan/variable_planner.h"
#include "common/wire/protocol_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "ps/store/dynamic_row_initializer.h"
#include "ps/store/ps_server.h"
#include "worker/exchange/sparse_lookup.h"
#include "worker/exchange/variable_exchange.h"
#include "worker/local/keras_updater.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kDim = 4, kMaxRows = 1000;
constexpr uint64_t kSeed = 7;
constexpr float kLearningRate = 0.5f;

// Keys of every kind a dynamic table takes: small, negative, the extremes, high bits only.
const std::vector<int64_t> kKeys = {5,
                                    -3,
                                    0,
                                    std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max(),
                                    int64_t{1} << 62,
                                    -(int64_t{1} << 40),
                                    123456789012345,
                                    999,
                                    kMaxRows};

VariableSpec Variable(const std::string& name, std::vector<int64_t> shape, const std::string& init, bool sparse) {
  VariableSpec v;
  v.name = name;
  v.shape = std::move(shape);
  v.initializer.type = init;
  v.sparse = sparse;
  return v;
}

std::vector<VariableSpec> Variables() {
  VariableSpec table = Variable("emb", {kMaxRows, kDim}, "random_uniform", true);
  table.dynamic = DynamicTableSpec();
  table.dynamic->max_rows = kMaxRows;
  return {table, Variable("w", {3, 2}, "glorot_uniform", false)};
}

InitializerProto Uniform() {
  InitializerProto init;
  init.set_type("random_uniform");
  init.set_minval(-0.05);
  init.set_maxval(0.05);
  return init;
}

// The plan the planner makes for Variables() on `num_ps` ps: the dynamic table one shard per ps
// (shard i on ps task i), the dense variable as the planner places it.
VariablePlanProto Plan(int num_ps) {
  PartitionerSpec partitioner;
  partitioner.kind = PartitionerSpec::Kind::kFixedShards;
  partitioner.num_shards = num_ps;
  VariablePlanProto dense = VariablePlanToProto(*PlanVariables({Variables()[1]}, partitioner, num_ps), kSeed);
  VariablePlanProto plan;
  plan.set_num_ps(num_ps);
  VariablePlanProto::Variable* table = plan.add_variables();
  table->set_name("emb");
  table->add_shape(kMaxRows);
  table->add_shape(kDim);
  table->set_dtype(DT_FLOAT);
  table->set_sparse(true);
  table->mutable_dynamic()->set_admission_threshold(1);
  table->mutable_dynamic()->set_max_rows(kMaxRows);
  for (int i = 0; i < num_ps; ++i) {
    ShardSpecProto* s = table->add_shards();
    s->set_shard_name(DynamicShardName("emb", i, num_ps));
    s->set_variable_name("emb");
    s->add_full_shape(kMaxRows);
    s->add_full_shape(kDim);
    s->set_row_offset(i);
    s->set_row_stride(num_ps);
    s->set_rows(DynamicShardCap(kMaxRows, num_ps));
    s->set_dtype(DT_FLOAT);
    *s->mutable_initializer() = Uniform();
    s->set_seed(kSeed);
    s->set_ps_task(i);
    s->set_sparse(true);
  }
  *plan.add_variables() = dense.variables(0);
  return plan;
}

// The initializer's row of `key`, computed apart from the ps.
std::vector<float> InitialRow(int64_t key) {
  absl::StatusOr<DynamicRowInitializer> init = DynamicRowInitializer::Create(Uniform(), kSeed, "emb", kDim);
  EXPECT_TRUE(init.ok()) << init.status();
  std::vector<float> row(kDim);
  init->Fill(key, absl::MakeSpan(row));
  return row;
}

// Deterministic gradient values.
Tensor Grads(std::vector<int64_t> shape, float scale) {
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.flat()[i] = scale * static_cast<float>((i * 7) % 11 - 5);
  return t;
}

// The in-process client of a ps, which records the step of each PushKeys and can fail the keyed
// calls as a ps that is gone does.
class RecordingPsClient : public LocalPsClient {
 public:
  using LocalPsClient::LocalPsClient;

  absl::Status PullKeys(const PullKeysRequest& request, PullKeysResponse* response) override {
    if (down_) return absl::UnavailableError("connection refused");
    return LocalPsClient::PullKeys(request, response);
  }
  absl::Status PushKeys(const PushKeysRequest& request, PushKeysResponse* response) override {
    if (down_) return absl::UnavailableError("connection refused");
    absl::MutexLock l(&mu_);
    push_steps_.push_back(request.step());
    return LocalPsClient::PushKeys(request, response);
  }
  std::vector<int64_t> push_steps() {
    absl::MutexLock l(&mu_);
    return push_steps_;
  }
  void set_down(bool down) { down_ = down; }

 private:
  bool down_ = false;  // set between calls only
  absl::Mutex mu_;
  std::vector<int64_t> push_steps_ ABSL_GUARDED_BY(mu_);
};

class DynamicExchangeTest : public ::testing::TestWithParam<int> {
 protected:
  int num_ps() const { return GetParam(); }

  void SetUp() override {
    plan_ = Plan(num_ps());
    for (int p = 0; p < num_ps(); ++p) {
      PsServer::Options options;
      options.task = absl::StrCat("ps:", p);
      ps_.push_back(std::make_unique<PsServer>(options));
      clients_.push_back(std::make_unique<RecordingPsClient>(ps_.back().get()));
      CreateShardsRequest create;
      create.set_protocol_version(kProtocolVersion);
      for (const auto& v : plan_.variables()) {
        for (int i = 0; i < v.shards_size(); ++i) {
          if (v.shards(i).ps_task() != p) continue;
          if (v.has_dynamic()) {
            absl::StatusOr<DynamicShardSpecProto> spec = DynamicShardSpecFromPlan(v, i);
            ASSERT_TRUE(spec.ok()) << spec.status();
            *create.add_dynamic_shards() = *spec;
          } else {
            *create.add_shards() = v.shards(i);
          }
        }
      }
      create.mutable_optimizer()->set_type("sgd");
      create.mutable_optimizer()->mutable_learning_rate()->set_initial(kLearningRate);
      create.set_mode(UPDATE_ASYNC);
      create.set_num_workers(1);
      create.set_initialize(true);
      CreateShardsResponse created;
      ASSERT_TRUE(ps_.back()->CreateShards(create, &created).ok());
    }
  }

  std::unique_ptr<VariableExchange> Exchange() {
    std::vector<PsClient*> clients;
    for (auto& c : clients_) clients.push_back(c.get());
    auto ex = VariableExchange::Create(Variables(), plan_, clients);
    EXPECT_TRUE(ex.ok()) << ex.status();
    return ex.ok() ? std::move(*ex) : nullptr;
  }

  // The stats of the dynamic shard on ps `p` (dyn_<p>_of_<n>), and that it is the only one there.
  DynamicShardStats Stats(int p) {
    PsStatsResponse stats;
    EXPECT_TRUE(ps_[p]->GetStats(PsStatsRequest(), &stats).ok());
    EXPECT_EQ(stats.dynamic_shards_size(), 1);
    if (stats.dynamic_shards_size() != 1) return DynamicShardStats();
    EXPECT_EQ(stats.dynamic_shards(0).name(), DynamicShardName("emb", p, num_ps()));
    return stats.dynamic_shards(0);
  }

  // How many of `keys` DynamicKeyOwner places on shard `p`.
  int64_t Owned(const std::vector<int64_t>& keys, int p) {
    int64_t n = 0;
    for (int64_t k : keys) n += DynamicKeyOwner(static_cast<uint64_t>(k), num_ps()) == p ? 1 : 0;
    return n;
  }

  VariablePlanProto plan_;
  std::vector<std::unique_ptr<PsServer>> ps_;
  std::vector<std::unique_ptr<RecordingPsClient>> clients_;
};

TEST_P(DynamicExchangeTest, NewKeysPullTheInitializersRowsFromTheShardThatOwnsThem) {
  auto ex = Exchange();
  ASSERT_NE(ex, nullptr);
  SparseLookup lookup{{kKeys, {}}};
  std::vector<Tensor> params;
  absl::Status pulled = ex->PullAll(0, &params, &lookup);
  ASSERT_TRUE(pulled.ok()) << pulled;
  ASSERT_EQ(params[0].shape(), (std::vector<int64_t>{static_cast<int64_t>(kKeys.size()), kDim}));
  for (size_t k = 0; k < kKeys.size(); ++k) {
    const std::vector<float> want = InitialRow(kKeys[k]);
    for (int64_t e = 0; e < kDim; ++e) EXPECT_EQ(params[0].flat()[k * kDim + e], want[e]) << "key " << kKeys[k];
  }
  Tensor dense(DType::kFloat32, {3, 2});
  ASSERT_TRUE(InitializeVariable(Variables()[1], kSeed, &dense).ok());
  EXPECT_EQ(std::vector<float>(params[1].flat().begin(), params[1].flat().end()),
            std::vector<float>(dense.flat().begin(), dense.flat().end()));
  // Each shard looked up exactly its own keys, made no row, and was asked only when it had keys.
  for (int p = 0; p < num_ps(); ++p) {
    const DynamicShardStats s = Stats(p);
    EXPECT_EQ(s.lookups(), Owned(kKeys, p)) << p;
    EXPECT_EQ(s.pulls(), Owned(kKeys, p) > 0 ? 1 : 0) << p;
    EXPECT_EQ(s.rows(), 0) << p;
  }
}

TEST_P(DynamicExchangeTest, APushThenAPullGivesTheOptimizersRowsOnTheOwningShardsOnly) {
  auto ex = Exchange();
  ASSERT_NE(ex, nullptr);
  SparseLookup lookup{{kKeys, {}}};
  std::vector<Tensor> params;
  ASSERT_TRUE(ex->PullAll(0, &params, &lookup).ok());
  const Tensor w = params[1];
  const std::vector<Tensor> grads = {Grads({static_cast<int64_t>(kKeys.size()), kDim}, 0.1f), Grads({3, 2}, 0.2f)};
  absl::StatusOr<int64_t> stale = ex->PushAll(0, false, grads, &lookup);
  ASSERT_TRUE(stale.ok()) << stale.status();
  EXPECT_EQ(*stale, 0);

  // A second step over other keys and some of the first: the first's rows as SGD left them.
  SparseLookup again{{{kKeys[3], 77, kKeys[0], kKeys[1]}, {}}};
  ASSERT_TRUE(ex->PullAll(0, &params, &again).ok());
  ASSERT_EQ(params[0].shape(), (std::vector<int64_t>{4, kDim}));
  for (size_t k = 0; k < again.unique_ids[0].size(); ++k) {
    const int64_t key = again.unique_ids[0][k];
    const auto first = std::find(kKeys.begin(), kKeys.end(), key);
    std::vector<float> want = InitialRow(key);
    if (first != kKeys.end()) {
      const size_t row = static_cast<size_t>(first - kKeys.begin());
      for (int64_t e = 0; e < kDim; ++e) want[e] -= kLearningRate * grads[0].flat()[row * kDim + e];
    }
    for (int64_t e = 0; e < kDim; ++e) EXPECT_FLOAT_EQ(params[0].flat()[k * kDim + e], want[e]) << "key " << key;
  }
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_FLOAT_EQ(params[1].flat()[i], w.flat()[i] - kLearningRate * grads[1].flat()[i]) << i;
  }
  // Rows were made on the owning shard only; every ps with a dynamic shard got the push.
  int64_t rows = 0;
  for (int p = 0; p < num_ps(); ++p) {
    const DynamicShardStats s = Stats(p);
    EXPECT_EQ(s.rows(), Owned(kKeys, p)) << p;
    EXPECT_EQ(s.pushed_rows(), Owned(kKeys, p)) << p;
    EXPECT_EQ(s.pushes(), 1) << p;
    rows += s.rows();
  }
  EXPECT_EQ(rows, static_cast<int64_t>(kKeys.size()));
  // One acknowledged push per shard, dynamic ones included.
  std::map<std::string, int64_t> acked;
  ex->TakeAcknowledgedPushes(&acked);
  for (int p = 0; p < num_ps(); ++p) EXPECT_EQ(acked[DynamicShardName("emb", p, num_ps())], 1) << p;
  for (const auto& s : plan_.variables(1).shards()) EXPECT_EQ(acked[s.shard_name()], 1) << s.shard_name();
  EXPECT_EQ(acked.size(), static_cast<size_t>(num_ps() + plan_.variables(1).shards_size()));
  acked.clear();
  ex->TakeAcknowledgedPushes(&acked);
  EXPECT_TRUE(acked.empty());
}

TEST_P(DynamicExchangeTest, APsWithNoneOfTheStepsKeysIsNotPulledButIsPushed) {
  auto ex = Exchange();
  ASSERT_NE(ex, nullptr);
  std::vector<int64_t> keys;  // keys of shard 0 only
  for (int64_t k = 0; keys.size() < 3 && k < 1000; ++k) {
    if (DynamicKeyOwner(static_cast<uint64_t>(k), num_ps()) == 0) keys.push_back(k);
  }
  ASSERT_EQ(keys.size(), 3u);
  SparseLookup lookup{{keys, {}}};
  std::vector<Tensor> params;
  ASSERT_TRUE(ex->PullAll(0, &params, &lookup).ok());
  const std::vector<Tensor> grads = {Grads({3, kDim}, 0.1f), Grads({3, 2}, 0.2f)};
  ASSERT_TRUE(ex->PushAll(0, false, grads, &lookup).ok());
  for (int p = 0; p < num_ps(); ++p) {
    const DynamicShardStats s = Stats(p);
    EXPECT_EQ(s.pulls(), p == 0 ? 1 : 0) << p;
    EXPECT_EQ(s.lookups(), p == 0 ? 3 : 0) << p;
    EXPECT_EQ(s.pushes(), 1) << p;  // the step's clock reaches every shard (ttl_steps)
    EXPECT_EQ(s.rows(), p == 0 ? 3 : 0) << p;
  }
}

TEST_P(DynamicExchangeTest, PushKeysCarryTheHighestDenseVersionPulledAsTheirStep) {
  auto ex = Exchange();
  ASSERT_NE(ex, nullptr);
  SparseLookup lookup{{kKeys, {}}};
  std::vector<Tensor> params;
  const std::vector<Tensor> grads = {Grads({static_cast<int64_t>(kKeys.size()), kDim}, 0.1f), Grads({3, 2}, 0.2f)};
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(ex->PullAll(0, &params, &lookup).ok());
    ASSERT_TRUE(ex->PushAll(0, false, grads, &lookup).ok());
  }
  for (int p = 0; p < num_ps(); ++p) EXPECT_EQ(clients_[p]->push_steps(), (std::vector<int64_t>{0, 1, 2})) << p;
}

TEST_P(DynamicExchangeTest, APsThatFailsTheKeyedCallsGivesAbortedNamingIt) {
  auto ex = Exchange();
  ASSERT_NE(ex, nullptr);
  const int down = num_ps() - 1;
  ASSERT_GT(Owned(kKeys, down), 0);
  SparseLookup lookup{{kKeys, {}}};
  std::vector<Tensor> params;
  ASSERT_TRUE(ex->PullAll(0, &params, &lookup).ok());
  clients_[down]->set_down(true);
  absl::Status pulled = ex->PullAll(0, &params, &lookup);
  EXPECT_EQ(pulled.code(), absl::StatusCode::kAborted) << pulled;
  EXPECT_THAT(std::string(pulled.message()), StartsWith(absl::StrCat("ps:", down, " ")));
  const std::vector<Tensor> grads = {Grads({static_cast<int64_t>(kKeys.size()), kDim}, 0.1f), Grads({3, 2}, 0.2f)};
  absl::Status pushed = ex->PushAll(0, false, grads, &lookup).status();
  EXPECT_EQ(pushed.code(), absl::StatusCode::kAborted) << pushed;
  EXPECT_THAT(std::string(pushed.message()), StartsWith(absl::StrCat("ps:", down, " ")));
  std::map<std::string, int64_t> acked;
  ex->TakeAcknowledgedPushes(&acked);
  EXPECT_EQ(acked.count(DynamicShardName("emb", down, num_ps())), 0u);
}

TEST_P(DynamicExchangeTest, SyncPullsAndPushesAreRefusedBeforeAnythingIsSent) {
  auto ex = Exchange();
  ASSERT_NE(ex, nullptr);
  SparseLookup lookup{{kKeys, {}}};
  std::vector<Tensor> params;
  absl::Status pulled = ex->PullAll(3, &params, &lookup);
  EXPECT_EQ(pulled.code(), absl::StatusCode::kFailedPrecondition) << pulled;
  EXPECT_THAT(std::string(pulled.message()), HasSubstr("dynamic table emb trains in async mode only"));
  const std::vector<Tensor> grads = {Grads({static_cast<int64_t>(kKeys.size()), kDim}, 0.1f), Grads({3, 2}, 0.2f)};
  EXPECT_EQ(ex->PushAll(0, true, grads, &lookup).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ex->PushAll(0, false, grads, &lookup, 0).status().code(), absl::StatusCode::kFailedPrecondition);
  for (int p = 0; p < num_ps(); ++p) {
    const DynamicShardStats s = Stats(p);
    EXPECT_EQ(s.pulls() + s.pushes(), 0) << p;
    PsStatsResponse stats;
    ASSERT_TRUE(ps_[p]->GetStats(PsStatsRequest(), &stats).ok());
    EXPECT_EQ(stats.total().pulls() + stats.total().pushes(), 0) << p;
  }
}

TEST_P(DynamicExchangeTest, APlanThatDisagreesOnDynamicIsRefused) {
  std::vector<VariableSpec> vars = Variables();
  vars[0].dynamic.reset();
  std::vector<PsClient*> clients;
  for (auto& c : clients_) clients.push_back(c.get());
  auto ex = VariableExchange::Create(vars, plan_, clients);
  EXPECT_EQ(ex.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ex.status().message()), HasSubstr("is dynamic table emb"));
}

INSTANTIATE_TEST_SUITE_P(PsCounts, DynamicExchangeTest, ::testing::Values(1, 3));

TEST(IdDeduperDynamicTest, ADynamicTableTakesAnyInt64Id) {
  std::vector<VariableSpec> vars = Variables();
  vars.push_back(Variable("plain", {10, kDim}, "zeros", true));
  IdDeduper dedupe(vars);  // fields: emb (dynamic), plain
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  // Keys that differ only in their high bits too.
  const std::vector<int64_t> column = {-5, big, kMaxRows, small, -5, int64_t{1} << 62, int64_t{3} << 62, big};
  Batch batch;
  batch.inputs = Tensor(DType::kFloat32, {static_cast<int64_t>(column.size()), 1});
  for (size_t b = 0; b < column.size(); ++b) {
    batch.ids.push_back(column[b]);
    batch.ids.push_back(static_cast<int64_t>(b % 3));
  }
  SparseLookup lookup;
  absl::Status built = dedupe.Build(&batch, &lookup);
  ASSERT_TRUE(built.ok()) << built;
  EXPECT_EQ(lookup.unique_ids[0], (std::vector<int64_t>{-5, big, kMaxRows, small, int64_t{1} << 62, int64_t{3} << 62}));
  EXPECT_EQ(lookup.unique_ids[2], (std::vector<int64_t>{0, 1, 2}));
  for (size_t b = 0; b < column.size(); ++b) {
    EXPECT_EQ(lookup.unique_ids[0][batch.positions[b * 2]], column[b]) << b;
  }
  // Many keys apart only in bits 40 and up: each once, in order.
  Batch wide;
  wide.inputs = Tensor(DType::kFloat32, {4096, 1});
  for (int64_t b = 0; b < 4096; ++b) {
    wide.ids.push_back((b % 2048) << 40);
    wide.ids.push_back(0);
  }
  ASSERT_TRUE(dedupe.Build(&wide, &lookup).ok());
  ASSERT_EQ(lookup.unique_ids[0].size(), 2048u);
  for (int64_t k = 0; k < 2048; ++k) EXPECT_EQ(lookup.unique_ids[0][k], k << 40) << k;
  // The vocabulary table beside it still checks its rows.
  batch.ids[1] = 10;
  absl::Status refused = dedupe.Build(&batch, &lookup);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("outside its table's 10 rows"));
}

}  // namespace
}  // namespace pstrain
