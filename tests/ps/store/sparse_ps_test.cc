// A ps holding embedding-table shards: sparse pulls gather rows by global id, sparse pushes apply
// the optimizer to the touched rows only, foreign ids are rejected with nothing applied, sync mode
// sums the rows of all workers once, concurrent pulls never see a half-updated row.
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "common/wire/protocol_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "ps/client/ps_stats_format.h"
#include "ps/store/initializers.h"
#include "ps/store/ps_server.h"
#include "tests/ps/ps_test_util.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::OnePull;
using testing_util::OnePush;
using testing_util::RowFloats;
using testing_util::Rows;
using testing_util::Spec;
using testing_util::TableShard;
using testing_util::ToFloats;

constexpr int64_t kVocab = 10, kDim = 4;
constexpr double kLr = 0.1;

OptimizerProto Adagrad() {
  OptimizerProto o;
  o.set_type("adagrad");
  o.mutable_learning_rate()->set_initial(kLr);
  o.set_initial_accumulator_value(0.1);
  o.set_epsilon(1e-7);
  return o;
}

// The whole table as a single process initialises it.
std::vector<float> WholeTable() {
  Tensor t;
  EXPECT_TRUE(InitializeRows(Spec("emb", {kVocab, kDim}, 0, kVocab, "random_uniform"), &t).ok());
  return std::vector<float>(t.flat().begin(), t.flat().end());
}

class SparsePsTest : public ::testing::Test {
 protected:
  // Table "emb" [10, 4] in two mod shards (part_0: even rows, part_1: odd rows) and a dense "w".
  absl::Status Create(UpdateMode mode = UPDATE_ASYNC, int workers = 1, OptimizerProto optimizer = Adagrad(),
                      NonFinitePolicy non_finite = NON_FINITE_REJECT) {
    CreateShardsRequest r = testing_util::CreateRequest(
        {TableShard("emb", kVocab, kDim, 0, 5, 2, "emb/part_0"), TableShard("emb", kVocab, kDim, 1, 5, 2, "emb/part_1"),
         Spec("w", {2, 3}, 0, 2, "ones")},
        mode, workers, non_finite);
    *r.mutable_optimizer() = optimizer;
    CreateShardsResponse resp;
    return client_.CreateShards(r, &resp);
  }

  // Every row of the table in global order (pulled by id from both shards), and the versions.
  std::vector<float> Table(int64_t* version0 = nullptr, int64_t* version1 = nullptr) {
    PullRequest pull;
    *pull.add_sparse() = Rows("emb/part_0", {0, 2, 4, 6, 8});
    *pull.add_sparse() = Rows("emb/part_1", {1, 3, 5, 7, 9});
    PullResponse got;
    EXPECT_TRUE(client_.Pull(pull, &got).ok());
    std::vector<float> table(kVocab * kDim);
    for (int s = 0; s < 2; ++s) {
      const std::vector<float> rows = RowFloats(got.sparse(s));
      for (int j = 0; j < 5; ++j) std::copy_n(&rows[j * kDim], kDim, &table[(2 * j + s) * kDim]);
    }
    if (version0 != nullptr) *version0 = got.sparse(0).version();
    if (version1 != nullptr) *version1 = got.sparse(1).version();
    return table;
  }

  PsServer server_{PsServer::Options{"ps:0"}};
  LocalPsClient client_{&server_};
};

TEST_F(SparsePsTest, PullsGatherRowsByGlobalIdFromTheWholeTablesValues) {
  ASSERT_TRUE(Create().ok());
  const std::vector<float> whole = WholeTable();
  PullRequest pull;
  *pull.add_sparse() = Rows("emb/part_1", {7, 3, 9});
  *pull.add_sparse() = Rows("emb/part_0", {0, 8});
  pull.add_shard_names("w");
  PullResponse got;
  ASSERT_TRUE(client_.Pull(pull, &got).ok());
  ASSERT_EQ(got.values_size(), 1);
  EXPECT_EQ(ToFloats(got.values(0).value()), std::vector<float>(6, 1.0f));
  ASSERT_EQ(got.sparse_size(), 2);
  EXPECT_EQ(got.sparse(0).shard_name(), "emb/part_1");
  EXPECT_EQ(got.sparse(0).num_ids(), 3);
  const std::vector<int64_t> ids0 = {7, 3, 9}, ids1 = {0, 8};
  const std::vector<float> rows0 = RowFloats(got.sparse(0)), rows1 = RowFloats(got.sparse(1));
  ASSERT_EQ(rows0.size(), 3u * kDim);
  for (size_t j = 0; j < ids0.size(); ++j) {
    EXPECT_TRUE(std::equal(&rows0[j * kDim], &rows0[j * kDim] + kDim, &whole[ids0[j] * kDim])) << ids0[j];
  }
  for (size_t j = 0; j < ids1.size(); ++j) {
    EXPECT_TRUE(std::equal(&rows1[j * kDim], &rows1[j * kDim] + kDim, &whole[ids1[j] * kDim])) << ids1[j];
  }
  EXPECT_EQ(Table(), whole);
}

TEST_F(SparsePsTest, APushAppliesAdagradToTheSummedRowsOnly) {
  ASSERT_TRUE(Create().ok());
  const std::vector<float> before = Table();
  // Row 3 twice (summed), row 7 once; row 0 of the other shard with an empty-but-named update.
  std::vector<float> g = {0.5f, -1.f, 0.25f, 2.f, -0.3f, 0.1f, 0.2f, 0.f, 0.1f, 0.2f, -0.4f, 1.f};
  PushRequest push;
  *push.add_sparse() = Rows("emb/part_1", {3, 7, 3}, g);
  *push.add_sparse() = Rows("emb/part_0", {}, {});
  PushResponse pushed;
  ASSERT_TRUE(client_.Push(push, &pushed).ok());
  EXPECT_THAT(pushed.versions(), ::testing::ElementsAre(1, 1));  // an empty entry is an update too
  int64_t v0 = 0, v1 = 0;
  const std::vector<float> after = Table(&v0, &v1);
  EXPECT_EQ(v0, 1);
  EXPECT_EQ(v1, 1);
  for (int64_t r = 0; r < kVocab; ++r) {
    for (int64_t e = 0; e < kDim; ++e) {
      const size_t i = static_cast<size_t>(r * kDim + e);
      if (r != 3 && r != 7) {
        EXPECT_EQ(std::memcmp(&after[i], &before[i], 4), 0) << "row " << r;
        continue;
      }
      const double grad = r == 3 ? double(g[e]) + g[8 + e] : g[4 + e];
      const double accum = 0.1 + grad * grad;  // Keras 3's Adagrad, from the initial accumulator
      EXPECT_NEAR(after[i], before[i] - kLr * grad / std::sqrt(accum + 1e-7), 1e-6) << "row " << r;
    }
  }
}

TEST_F(SparsePsTest, AForeignIdIsRejectedNamingShardAndIdAndNothingIsApplied) {
  ASSERT_TRUE(Create().ok());
  const std::vector<float> before = Table();
  for (int64_t bad : {int64_t{4}, int64_t{11}, int64_t{-1}, std::numeric_limits<int64_t>::min()}) {
    PushRequest push = OnePush("w", {2, 3}, std::vector<float>(6, 1.0f));
    *push.add_sparse() = Rows("emb/part_0", {2}, std::vector<float>(kDim, 1.0f));
    *push.add_sparse() = Rows("emb/part_1", {1, bad}, std::vector<float>(2 * kDim, 1.0f));
    PushResponse pushed;
    absl::Status s = client_.Push(push, &pushed);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("shard emb/part_1 of table emb does not hold row id " + std::to_string(bad)));
    PullRequest pull;
    *pull.add_sparse() = Rows("emb/part_1", {bad});
    PullResponse got;
    EXPECT_EQ(client_.Pull(pull, &got).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  int64_t v0 = -1, v1 = -1;
  EXPECT_EQ(Table(&v0, &v1), before);
  EXPECT_EQ(v0, 0);
  EXPECT_EQ(v1, 0);
  PullResponse w;
  ASSERT_TRUE(client_.Pull(OnePull("w"), &w).ok());
  EXPECT_EQ(w.values(0).version(), 0);
  EXPECT_EQ(ToFloats(w.values(0).value()), std::vector<float>(6, 1.0f));
}

TEST_F(SparsePsTest, TableShardsMoveOnlyByRowsAndDenseShardsOnlyWhole) {
  ASSERT_TRUE(Create().ok());
  PullResponse got;
  absl::Status s = client_.Pull(OnePull("emb/part_0"), &got);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("pulled and pushed by row ids"));
  PushResponse pushed;
  s = client_.Push(OnePush("emb/part_0", {5, kDim}, std::vector<float>(5 * kDim)), &pushed);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  PullRequest rows_of_dense;
  *rows_of_dense.add_sparse() = Rows("w", {0});
  s = client_.Pull(rows_of_dense, &got);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("pulled and pushed whole"));
}

TEST_F(SparsePsTest, SizesThatDoNotFitTheIdCountAreRejected) {
  ASSERT_TRUE(Create().ok());
  PushResponse pushed;
  PushRequest push;
  *push.add_sparse() = Rows("emb/part_0", {0, 2}, std::vector<float>(2 * kDim));
  push.mutable_sparse(0)->set_num_ids(3);  // ids carry 2
  EXPECT_EQ(client_.Push(push, &pushed).code(), absl::StatusCode::kInvalidArgument);
  push.mutable_sparse(0)->set_num_ids(int64_t{1} << 62);  // 8 * num_ids would overflow to a small number
  EXPECT_EQ(client_.Push(push, &pushed).code(), absl::StatusCode::kInvalidArgument);
  push.mutable_sparse(0)->set_num_ids(2);
  push.mutable_sparse(0)->mutable_values()->resize(2 * kDim * 4 - 4);  // a float short
  absl::Status s = client_.Push(push, &pushed);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("2 gradient rows need 32 bytes"));
  int64_t v0 = -1;
  Table(&v0);
  EXPECT_EQ(v0, 0);
}

TEST_F(SparsePsTest, NonFiniteRowsAreRejectedOrSkipped) {
  std::vector<float> g(kDim, 0.5f);
  g[2] = std::numeric_limits<float>::quiet_NaN();
  for (NonFinitePolicy policy : {NON_FINITE_REJECT, NON_FINITE_SKIP}) {
    ASSERT_TRUE(Create(UPDATE_ASYNC, 1, Adagrad(), policy).ok());
    const std::vector<float> before = Table();
    PushRequest push;
    *push.add_sparse() = Rows("emb/part_0", {4}, g);
    PushResponse pushed;
    absl::Status s = client_.Push(push, &pushed);
    if (policy == NON_FINITE_REJECT) {
      EXPECT_THAT(std::string(s.message()), HasSubstr("1 non-finite values"));
    } else {
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_EQ(pushed.skipped_non_finite(), 1);
    }
    EXPECT_EQ(Table(), before);
  }
}

TEST_F(SparsePsTest, SyncSumsTheRowsOfAllWorkersAndAppliesThemOnce) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 2).ok());
  const std::vector<float> before = Table();
  const std::vector<float> g0 = {1, 1, 1, 1, 0.5f, 0.5f, 0.5f, 0.5f}, g1 = {2, 2, 2, 2, -1, -1, -1, -1};
  auto push = [&](int worker, const std::vector<int64_t>& ids, const std::vector<float>& g) {
    PushRequest r;
    r.set_worker_index(worker);
    r.set_step(0);
    *r.add_sparse() = Rows("emb/part_1", ids, g);
    *r.add_sparse() = Rows("emb/part_0", {}, {});
    PushResponse resp;
    absl::Status s = client_.Push(r, &resp);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_THAT(resp.versions(), ::testing::ElementsAre(1, 1));
  };
  std::thread first([&] { push(0, {1, 3}, g0); });  // parks until worker 1 pushes
  push(1, {3, 5}, g1);
  first.join();
  int64_t v0 = 0, v1 = 0;
  const std::vector<float> after = Table(&v0, &v1);
  EXPECT_EQ(v0, 1);
  EXPECT_EQ(v1, 1);
  // Row 3 gets 0.5 + 2 in ONE update: accum 0.1 + 2.5^2, not two updates.
  auto updated = [&](int64_t row, double grad) {
    return before[row * kDim] - kLr * grad / std::sqrt(0.1 + grad * grad + 1e-7);
  };
  EXPECT_NEAR(after[1 * kDim], updated(1, 1.0), 1e-6);
  EXPECT_NEAR(after[3 * kDim], updated(3, 2.5), 1e-6);
  EXPECT_NEAR(after[5 * kDim], updated(5, -1.0), 1e-6);
  EXPECT_EQ(after[7 * kDim], before[7 * kDim]);
}

// Rows of 1024 floats all equal: every push adds the same amount to every element of a row, so a
// pulled row whose elements differ was read half-updated.
TEST(SparsePsConcurrency, APulledRowIsNeverHalfUpdated) {
  constexpr int64_t kRows = 64, kWide = 1024;
  PsServer server(PsServer::Options{"ps:0"});
  LocalPsClient client(&server);
  CreateShardsResponse created;
  ASSERT_TRUE(client
                  .CreateShards(testing_util::CreateRequest({TableShard("t", kRows, kWide, 0, kRows, 1, "t", "zeros")},
                                                            UPDATE_ASYNC, 1),
                                &created)
                  .ok());
  std::atomic<bool> done{false};
  std::atomic<int64_t> torn{0}, pulls{0};
  std::vector<int64_t> all(kRows);
  for (int64_t i = 0; i < kRows; ++i) all[i] = i;
  auto puller = [&] {
    PullRequest pull;
    *pull.add_sparse() = Rows("t", all);
    while (!done.load()) {
      PullResponse got;
      ASSERT_TRUE(client.Pull(pull, &got).ok());
      const std::vector<float> rows = RowFloats(got.sparse(0));
      for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t e = 1; e < kWide; ++e) torn += rows[r * kWide + e] != rows[r * kWide] ? 1 : 0;
      }
      ++pulls;
    }
  };
  auto pusher = [&](int64_t first) {
    std::vector<int64_t> ids;
    for (int64_t i = first; i < kRows; i += 2) ids.push_back(i);
    const std::vector<float> minus_one(ids.size() * kWide, -1.0f);  // SGD lr 1: +1 per push
    for (int k = 0; k < 300; ++k) {
      PushRequest push;
      *push.add_sparse() = Rows("t", ids, minus_one);
      PushResponse pushed;
      ASSERT_TRUE(client.Push(push, &pushed).ok());
    }
  };
  std::thread p1(puller), p2(puller), w1(pusher, 0), w2(pusher, 1);
  w1.join();
  w2.join();
  done = true;
  p1.join();
  p2.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GT(pulls.load(), 0);
  PullRequest pull;
  *pull.add_sparse() = Rows("t", {0, 1});
  PullResponse got;
  ASSERT_TRUE(client.Pull(pull, &got).ok());
  EXPECT_EQ(RowFloats(got.sparse(0))[0], 300.0f);
  EXPECT_EQ(got.sparse(0).version(), 600);
}

TEST_F(SparsePsTest, StatsCountRowsAndTheirBytesNeverTheWholeShard) {
  ASSERT_TRUE(Create().ok());
  PullRequest pull;
  *pull.add_sparse() = Rows("emb/part_0", {0, 4, 8});
  PullResponse got;
  ASSERT_TRUE(client_.Pull(pull, &got).ok());
  PushRequest push;
  *push.add_sparse() = Rows("emb/part_0", {0, 4, 0}, std::vector<float>(3 * kDim, 0.1f));
  PushResponse pushed;
  ASSERT_TRUE(client_.Push(push, &pushed).ok());
  PsStatsResponse stats;
  ASSERT_TRUE(client_.GetStats(PsStatsRequest(), &stats).ok());
  const ShardStats& s = stats.shards(0);
  ASSERT_EQ(s.name(), "emb/part_0");
  EXPECT_EQ(s.pulls(), 1);
  EXPECT_EQ(s.rows_pulled(), 3);
  EXPECT_EQ(s.bytes_out(), 3 * kDim * 4);
  EXPECT_EQ(s.pushes(), 1);
  EXPECT_EQ(s.rows_pushed(), 3);
  EXPECT_EQ(s.bytes_in(), 3 * 8 + 3 * kDim * 4);
  EXPECT_EQ(stats.total().rows_pulled(), 3);
  EXPECT_EQ(stats.total().rows_pushed(), 3);
  // As the ps logs them when it stops and the chief writes them into summary.json.
  EXPECT_EQ(ShardStatsText(s), "1 pulls (3 rows, 48 B out), 1 pushes (3 rows, 72 B in), version 1");
  const nlohmann::json json = PsStatsToJson("ps:0", stats);
  EXPECT_EQ(json["task"], "ps:0");
  EXPECT_EQ(json["rows_pulled"], 3);
  EXPECT_EQ(json["shards"][0]["name"], "emb/part_0");
  EXPECT_EQ(json["shards"][0]["rows_pushed"], 3);
  EXPECT_EQ(json["shards"][2]["bytes_out"], 0);  // "w" was not pulled
}

}  // namespace
}  // namespace pstrain
