// A worker's VariableExchange for a model with an embedding table over 2 real PsServer objects
// (LocalPsClient), div and mod: a step pulls only its ids' rows from the shards that own them,
// pushes their gradient rows, and ends where single-process training (KerasUpdater::ApplySparse)
// ends; sync mode with 2 workers equals one update with the global batch.
#include <thread>

#include "common/plan/model_variables.h"
#include "common/plan/variable_planner.h"
#include "common/wire/protocol_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "ps/store/optimizer.h"
#include "ps/store/ps_server.h"
#include "worker/exchange/table_layout.h"
#include "worker/exchange/variable_exchange.h"
#include "worker/local/keras_updater.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kVocab = 50, kDim = 4;

std::vector<VariableSpec> Variables() {
  VariableSpec table{"emb", {kVocab, kDim}, DType::kFloat32, InitializerSpec{"random_uniform"}, true};
  VariableSpec dense{"w", {3, 2}, DType::kFloat32, InitializerSpec{"glorot_uniform"}, false};
  return {table, dense};
}

OptimizerSpec Adagrad() {
  OptimizerSpec o;
  o.type = "adagrad";
  o.learning_rate.initial = 0.5;
  return o;
}

// Deterministic gradient values for `n` rows.
Tensor Grads(std::vector<int64_t> shape, float scale) {
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.flat()[i] = scale * static_cast<float>((i * 7) % 11 - 5);
  return t;
}

class SparseExchangeTest : public ::testing::TestWithParam<std::string> {
 protected:
  void Start(UpdateMode mode, int workers) {
    PartitionerSpec partitioner;
    partitioner.kind = PartitionerSpec::Kind::kFixedShards;
    partitioner.num_shards = 3;
    partitioner.strategy = GetParam();
    plan_ = VariablePlanToProto(*PlanVariables(Variables(), partitioner, 2), 7);
    for (int p = 0; p < 2; ++p) {
      ps_.push_back(std::make_unique<PsServer>(PsServer::Options{absl::StrCat("ps:", p)}));
      clients_.push_back(std::make_unique<LocalPsClient>(ps_.back().get()));
      CreateShardsRequest create;
      create.set_protocol_version(kProtocolVersion);
      for (const auto& v : plan_.variables()) {
        for (const auto& s : v.shards()) {
          if (s.ps_task() == p) *create.add_shards() = s;
        }
      }
      *create.mutable_optimizer() = OptimizerProtoFromSpec(Adagrad());
      create.set_mode(mode);
      create.set_num_workers(workers);
      create.set_sync_timeout_ms(20000);
      create.set_initialize(true);
      CreateShardsResponse created;
      ASSERT_TRUE(ps_.back()->CreateShards(create, &created).ok());
    }
  }

  std::unique_ptr<VariableExchange> Exchange() {
    auto ex = VariableExchange::Create(Variables(), plan_, {clients_[0].get(), clients_[1].get()});
    EXPECT_TRUE(ex.ok()) << ex.status();
    return std::move(*ex);
  }

  // The whole table and dense variable as the ps tasks hold them now.
  std::vector<Tensor> Everything() {
    SparseLookup all;
    all.unique_ids.resize(2);
    for (int64_t i = 0; i < kVocab; ++i) all.unique_ids[0].push_back(i);
    std::vector<Tensor> params;
    EXPECT_TRUE(Exchange()->PullAll(0, &params, &all).ok());
    return params;
  }

  VariablePlanProto plan_;
  std::vector<std::unique_ptr<PsServer>> ps_;
  std::vector<std::unique_ptr<LocalPsClient>> clients_;
};

TEST_P(SparseExchangeTest, PullsOnlyTheStepsRowsFromTheShardsThatOwnThem) {
  Start(UPDATE_ASYNC, 1);
  Tensor table(DType::kFloat32, {kVocab, kDim}), dense(DType::kFloat32, {3, 2});
  ASSERT_TRUE(InitializeVariable(Variables()[0], 7, &table).ok());
  ASSERT_TRUE(InitializeVariable(Variables()[1], 7, &dense).ok());
  SparseLookup lookup{{{49, 0, 17, 3, 32}, {}}};
  std::vector<Tensor> params;
  ASSERT_TRUE(Exchange()->PullAll(0, &params, &lookup).ok());
  ASSERT_EQ(params[0].shape(), (std::vector<int64_t>{5, kDim}));
  for (size_t k = 0; k < 5; ++k) {
    for (int64_t e = 0; e < kDim; ++e) {
      EXPECT_EQ(params[0].flat()[k * kDim + e], table.flat()[lookup.unique_ids[0][k] * kDim + e]) << k;
    }
  }
  EXPECT_EQ(std::vector<float>(params[1].flat().begin(), params[1].flat().end()),
            std::vector<float>(dense.flat().begin(), dense.flat().end()));
  // Each table shard gave exactly the rows it owns: 5 rows of 16 bytes over all, one pull per ps.
  int64_t rows = 0, bytes = 0;
  for (auto& ps : ps_) {
    PsStatsResponse stats;
    ASSERT_TRUE(ps->GetStats(PsStatsRequest(), &stats).ok());
    for (const ShardStats& s : stats.shards()) {
      if (s.name().rfind("emb/", 0) != 0) continue;
      EXPECT_EQ(s.pulls(), 1) << s.name();
      rows += s.rows_pulled();
      bytes += s.bytes_out();
    }
  }
  EXPECT_EQ(rows, 5);
  EXPECT_EQ(bytes, 5 * kDim * 4);
}

TEST_P(SparseExchangeTest, AStepEndsWhereSingleProcessTrainingEnds) {
  Start(UPDATE_ASYNC, 1);
  auto ex = Exchange();
  SparseLookup lookup{{{8, 2, 44, 21, 5, 30}, {}}};
  std::vector<Tensor> params;
  ASSERT_TRUE(ex->PullAll(0, &params, &lookup).ok());
  std::vector<Tensor> grads = {Grads({6, kDim}, 0.1f), Grads({3, 2}, 0.2f)};
  auto stale = ex->PushAll(0, false, grads, &lookup);
  ASSERT_TRUE(stale.ok()) << stale.status();
  EXPECT_EQ(*stale, 0);

  std::vector<Tensor> local(2);
  local[0] = Tensor(DType::kFloat32, {kVocab, kDim});
  local[1] = Tensor(DType::kFloat32, {3, 2});
  ASSERT_TRUE(InitializeVariable(Variables()[0], 7, &local[0]).ok());
  ASSERT_TRUE(InitializeVariable(Variables()[1], 7, &local[1]).ok());
  auto updater = NewKerasUpdater(Adagrad(), Variables());
  ASSERT_TRUE(updater.ok());
  ASSERT_TRUE((*updater)->ApplySparse(0, lookup.unique_ids[0], grads[0], &local[0]).ok());
  ASSERT_TRUE((*updater)->Apply(grads, &local).ok());

  const std::vector<Tensor> cluster = Everything();
  for (int v = 0; v < 2; ++v) {
    ASSERT_EQ(cluster[v].num_elements(), local[v].num_elements());
    for (int64_t i = 0; i < local[v].num_elements(); ++i)
      EXPECT_FLOAT_EQ(cluster[v].flat()[i], local[v].flat()[i]) << v << " " << i;
  }
}

TEST_P(SparseExchangeTest, SyncWorkersSumTheirRowsIntoOneGlobalStep) {
  Start(UPDATE_SYNC, 2);
  auto ex0 = Exchange(), ex1 = Exchange();
  SparseLookup l0{{{1, 2, 3}, {}}}, l1{{{4, 3}, {}}};
  std::vector<Tensor> p0, p1;
  std::vector<Tensor> g0 = {Grads({3, kDim}, 0.1f), Grads({3, 2}, 0.1f)};
  std::vector<Tensor> g1 = {Grads({2, kDim}, -0.3f), Grads({3, 2}, 0.05f)};
  absl::Status s0, s1;
  std::thread w0([&] {
    s0 = ex0->PullAll(0, &p0, &l0);
    if (s0.ok()) s0 = ex0->PushAll(0, true, g0, &l0).status();
  });
  s1 = ex1->PullAll(0, &p1, &l1);
  if (s1.ok()) s1 = ex1->PushAll(1, true, g1, &l1).status();
  w0.join();
  ASSERT_TRUE(s0.ok()) << s0;
  ASSERT_TRUE(s1.ok()) << s1;

  // One process with the global batch: the ids of both workers (3 twice: summed), dense summed.
  std::vector<Tensor> local(2);
  local[0] = Tensor(DType::kFloat32, {kVocab, kDim});
  local[1] = Tensor(DType::kFloat32, {3, 2});
  ASSERT_TRUE(InitializeVariable(Variables()[0], 7, &local[0]).ok());
  ASSERT_TRUE(InitializeVariable(Variables()[1], 7, &local[1]).ok());
  Tensor rows(DType::kFloat32, {5, kDim});
  std::copy(g0[0].flat().begin(), g0[0].flat().end(), rows.flat().begin());
  std::copy(g1[0].flat().begin(), g1[0].flat().end(), rows.flat().begin() + 3 * kDim);
  Tensor dense = g0[1];
  for (int64_t i = 0; i < dense.num_elements(); ++i) dense.flat()[i] += g1[1].flat()[i];
  auto updater = NewKerasUpdater(Adagrad(), Variables());
  ASSERT_TRUE((*updater)->ApplySparse(0, std::vector<int64_t>{1, 2, 3, 4, 3}, rows, &local[0]).ok());
  ASSERT_TRUE((*updater)->Apply({Tensor(), dense}, &local).ok());

  const std::vector<Tensor> cluster = Everything();
  for (int v = 0; v < 2; ++v) {
    for (int64_t i = 0; i < local[v].num_elements(); ++i)
      EXPECT_NEAR(cluster[v].flat()[i], local[v].flat()[i], 1e-6) << v << " " << i;
  }
}

TEST_P(SparseExchangeTest, AnIdOutsideTheTableIsRejectedBeforeAnythingIsSent) {
  Start(UPDATE_ASYNC, 1);
  SparseLookup lookup{{{3, kVocab}, {}}};
  std::vector<Tensor> params;
  absl::Status s = Exchange()->PullAll(0, &params, &lookup);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("table emb has rows 0..49; row id 50 is outside it"));
  EXPECT_EQ(Exchange()->PullAll(0, &params, nullptr).code(), absl::StatusCode::kInvalidArgument);
  PsStatsResponse stats;
  ASSERT_TRUE(ps_[0]->GetStats(PsStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.total().pulls(), 0);
}

INSTANTIATE_TEST_SUITE_P(Strategies, SparseExchangeTest, ::testing::Values("div", "mod"));

TEST(TableLayoutTest, OwnersForDivAndMod) {
  std::vector<VariableSpec> vars = {{"t", {10, 2}, DType::kFloat32, {}, true}};
  PartitionerSpec p;
  p.kind = PartitionerSpec::Kind::kFixedShards;
  p.num_shards = 3;
  for (const std::string strategy : {"div", "mod"}) {
    p.strategy = strategy;
    const VariablePlanProto plan = VariablePlanToProto(*PlanVariables(vars, p, 2), 1);
    auto layout = TableLayout::FromPlan(plan.variables(0));
    ASSERT_TRUE(layout.ok()) << layout.status();
    EXPECT_EQ(layout->mod(), strategy == "mod");
    for (int64_t id = 0; id < 10; ++id) {
      const ShardSpecProto& s = plan.variables(0).shards(layout->ShardOf(id));
      const int64_t stride = std::max<int64_t>(s.row_stride(), 1);
      EXPECT_EQ((id - s.row_offset()) % stride, 0) << strategy << " " << id;
      EXPECT_TRUE(id >= s.row_offset() && (id - s.row_offset()) / stride < s.rows()) << strategy << " " << id;
    }
    VariablePlanProto::Variable swapped = plan.variables(0);
    swapped.mutable_shards()->SwapElements(0, 1);
    EXPECT_EQ(TableLayout::FromPlan(swapped).status().code(), absl::StatusCode::kInvalidArgument) << strategy;
  }
}

}  // namespace
}  // namespace pstrain
