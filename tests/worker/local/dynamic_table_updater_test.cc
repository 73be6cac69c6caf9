// `pstrain train`'s dynamic tables (VariableSpec::dynamic) live in the updater as the ps's own
// DynamicTable of one shard: a key's row starts as DynamicRowInitializer's (from the job seed) and
// moves by the optimizer's formula on its first push, admission drops early updates, the TTL
// evicts, and a table of 2^40 declared rows costs only the rows it holds.
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/plan/variable_planner.h"
#include "gtest/gtest.h"
#include "ps/store/dynamic_row_initializer.h"
#include "ps/store/dynamic_table_state.h"
#include "worker/local/keras_updater.h"

namespace pstrain {
namespace {

constexpr int64_t kDim = 3;
constexpr uint64_t kSeed = 7;
constexpr double kLearningRate = 0.25;

VariableSpec DynamicVariable(int64_t admission, int64_t ttl, int64_t max_rows = 1 << 20) {
  VariableSpec v;
  v.name = "user/embeddings";
  v.shape = {max_rows, kDim};
  v.initializer = InitializerSpec{"random_uniform"};
  v.sparse = true;
  DynamicTableSpec d;
  d.admission_threshold = admission;
  d.ttl_steps = ttl;
  d.max_rows = max_rows;
  v.dynamic = d;
  return v;
}

VariableSpec Dense() {
  VariableSpec v;
  v.name = "w";
  v.shape = {2};
  v.initializer = InitializerSpec{"ones"};
  return v;
}

OptimizerSpec Sgd() {
  OptimizerSpec sgd;
  sgd.type = "sgd";
  sgd.learning_rate.initial = kLearningRate;
  return sgd;
}

// The initial row of `key` as a ps shard of table `var` (any shard count) makes it.
std::vector<float> InitialRow(const VariableSpec& var, int64_t key, uint64_t seed = kSeed) {
  auto init = DynamicRowInitializer::Create(InitializerToProto(var.initializer), seed, var.name, kDim);
  EXPECT_TRUE(init.ok()) << init.status();
  std::vector<float> row(kDim);
  init->Fill(key, absl::Span<float>(row));
  return row;
}

Tensor Rows(const std::vector<std::vector<float>>& rows) {
  Tensor t(DType::kFloat32, {static_cast<int64_t>(rows.size()), kDim});
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t j = 0; j < kDim; ++j) t.flat()[i * kDim + j] = rows[i][j];
  }
  return t;
}

std::vector<float> Lookup(const ParameterUpdater& updater, int variable, int64_t key) {
  Tensor rows;
  const absl::Status s = updater.LookupDynamic(variable, std::vector<int64_t>{key}, &rows);
  EXPECT_TRUE(s.ok()) << s;
  return std::vector<float>(rows.flat().begin(), rows.flat().end());
}

DynamicTableState Saved(const ParameterUpdater& updater, int variable) {
  auto bytes = updater.SaveDynamic(variable, nullptr);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  auto state = DecodeDynamicTableState(bytes.ok() ? *bytes : "");
  EXPECT_TRUE(state.ok()) << state.status();
  return state.ok() ? *state : DynamicTableState{};
}

TEST(DynamicTableUpdaterTest, FirstPushMakesTheInitialRowPlusOneSgdStep) {
  const std::vector<VariableSpec> vars = {Dense(), DynamicVariable(1, 0)};
  auto updater = NewKerasUpdater(Sgd(), vars, kSeed);
  ASSERT_TRUE(updater.ok()) << updater.status();
  const int64_t big = (int64_t{1} << 40) + 3, negative = -5;
  // Before any push a lookup gives the initializer's row, drawn from the job seed.
  EXPECT_EQ(Lookup(**updater, 1, big), InitialRow(vars[1], big));
  EXPECT_NE(Lookup(**updater, 1, big), InitialRow(vars[1], big, kSeed + 1));
  EXPECT_EQ(Saved(**updater, 1).keys.size(), 0u);  // lookups store nothing

  const std::vector<std::vector<float>> grads = {{1, -2, 0.5f}, {0.125f, 4, -1}, {3, 0, 0.25f}};
  ASSERT_TRUE((*updater)->PushDynamic(1, std::vector<int64_t>{big, negative, big}, Rows(grads), 0).ok());
  const std::vector<float> init_big = InitialRow(vars[1], big), init_negative = InitialRow(vars[1], negative);
  const std::vector<float> got_big = Lookup(**updater, 1, big), got_negative = Lookup(**updater, 1, negative);
  for (int64_t j = 0; j < kDim; ++j) {
    // A repeated key's gradients are summed, then one SGD step: w - lr * g.
    const double want_big = static_cast<double>(init_big[j]) - kLearningRate * (double{grads[0][j]} + grads[2][j]);
    const double want_negative = static_cast<double>(init_negative[j]) - kLearningRate * grads[1][j];
    EXPECT_NEAR(got_big[j], want_big, 1e-6) << j;
    EXPECT_NEAR(got_negative[j], want_negative, 1e-6) << j;
  }
  const DynamicTableState state = Saved(**updater, 1);
  EXPECT_EQ(state.table_name, "user/embeddings");
  EXPECT_EQ(state.keys, (std::vector<int64_t>{negative, big}));
  EXPECT_EQ(state.counters.created, 2);

  // Dense variables still move by Apply; the dynamic table's gradient entry is not read.
  std::vector<Tensor> params = {Tensor(DType::kFloat32, {2}), Tensor()};
  for (float& x : params[0].flat()) x = 1;
  std::vector<Tensor> dense_grads = {Tensor(DType::kFloat32, {2}), Tensor()};
  for (float& x : dense_grads[0].flat()) x = 2;
  ASSERT_TRUE((*updater)->Apply(dense_grads, &params).ok());
  EXPECT_FLOAT_EQ(params[0].flat()[0], 1 - kLearningRate * 2);
}

TEST(DynamicTableUpdaterTest, AdmissionThresholdTwoDropsTheFirstUpdate) {
  const std::vector<VariableSpec> vars = {DynamicVariable(2, 0)};
  auto updater = NewKerasUpdater(Sgd(), vars, kSeed);
  ASSERT_TRUE(updater.ok()) << updater.status();
  const int64_t key = 123456789012345;
  const std::vector<float> first = {1, 1, 1}, second = {-2, 0.5f, 4};
  ASSERT_TRUE((*updater)->PushDynamic(0, std::vector<int64_t>{key}, Rows({first}), 0).ok());
  EXPECT_EQ(Lookup(**updater, 0, key), InitialRow(vars[0], key));  // not a row yet
  DynamicTableState state = Saved(**updater, 0);
  EXPECT_TRUE(state.keys.empty());
  EXPECT_EQ(state.counters.admission_dropped_updates, 1);
  // Lookups never count toward admission.
  for (int i = 0; i < 3; ++i) Lookup(**updater, 0, key + 1);
  ASSERT_TRUE((*updater)->PushDynamic(0, std::vector<int64_t>{key + 1}, Rows({first}), 1).ok());
  EXPECT_EQ(Lookup(**updater, 0, key + 1), InitialRow(vars[0], key + 1));

  ASSERT_TRUE((*updater)->PushDynamic(0, std::vector<int64_t>{key}, Rows({second}), 2).ok());
  const std::vector<float> init = InitialRow(vars[0], key), got = Lookup(**updater, 0, key);
  for (int64_t j = 0; j < kDim; ++j) {
    EXPECT_NEAR(got[j], static_cast<double>(init[j]) - kLearningRate * second[j], 1e-6) << j;  // only the second
  }
  state = Saved(**updater, 0);
  EXPECT_EQ(state.keys, std::vector<int64_t>{key});
}

TEST(DynamicTableUpdaterTest, RowsPastTheTtlAreEvictedAfterAPush) {
  const std::vector<VariableSpec> vars = {DynamicVariable(1, 2)};
  auto updater = NewKerasUpdater(Sgd(), vars, kSeed);
  ASSERT_TRUE(updater.ok()) << updater.status();
  const std::vector<float> g = {1, 2, 3};
  ASSERT_TRUE((*updater)->PushDynamic(0, std::vector<int64_t>{10}, Rows({g}), 0).ok());
  ASSERT_TRUE((*updater)->PushDynamic(0, std::vector<int64_t>{20}, Rows({g}), 2).ok());
  EXPECT_EQ(Saved(**updater, 0).keys, (std::vector<int64_t>{10, 20}));  // 2 - 0 is not past 2 steps
  ASSERT_TRUE((*updater)->PushDynamic(0, std::vector<int64_t>{20}, Rows({g}), 3).ok());
  const DynamicTableState state = Saved(**updater, 0);
  EXPECT_EQ(state.keys, std::vector<int64_t>{20});
  EXPECT_EQ(state.last_update_steps, std::vector<int64_t>{3});
  EXPECT_EQ(state.counters.evicted_ttl, 1);
  EXPECT_EQ(Lookup(**updater, 0, 10), InitialRow(vars[0], 10));  // evicted: the initial row again
}

// Adagrad has a slot per element: a [2^40, dim] table held whole would need terabytes.
TEST(DynamicTableUpdaterTest, AHugeDeclaredTableHoldsOnlyItsRows) {
  OptimizerSpec adagrad;
  adagrad.type = "adagrad";
  adagrad.learning_rate.initial = kLearningRate;
  const std::vector<VariableSpec> vars = {DynamicVariable(1, 0, int64_t{1} << 40)};
  auto updater = NewKerasUpdater(adagrad, vars, kSeed);
  ASSERT_TRUE(updater.ok()) << updater.status();
  ASSERT_TRUE((*updater)->PushDynamic(0, std::vector<int64_t>{1, 2}, Rows({{1, 1, 1}, {2, 2, 2}}), 0).ok());
  const DynamicTableState state = Saved(**updater, 0);
  EXPECT_EQ(state.keys.size(), 2u);
  EXPECT_EQ(state.num_slots, 1);
}

TEST(DynamicTableUpdaterTest, BadCallsAreRefused) {
  const std::vector<VariableSpec> vars = {Dense(), DynamicVariable(1, 0)};
  auto updater = NewKerasUpdater(Sgd(), vars, kSeed);
  ASSERT_TRUE(updater.ok()) << updater.status();
  Tensor rows;
  EXPECT_EQ((*updater)->LookupDynamic(0, std::vector<int64_t>{1}, &rows).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*updater)->LookupDynamic(5, std::vector<int64_t>{1}, &rows).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*updater)->SaveDynamic(0, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  const absl::Status shape = (*updater)->PushDynamic(1, std::vector<int64_t>{1, 2}, Rows({{1, 1, 1}}), 0);
  EXPECT_EQ(shape.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(shape.message().find("user/embeddings"), absl::string_view::npos) << shape;
  Tensor table(DType::kFloat32, {1 << 20, kDim});
  EXPECT_EQ((*updater)->ApplySparse(1, std::vector<int64_t>{1}, Rows({{1, 1, 1}}), &table).code(),
            absl::StatusCode::kInvalidArgument);
  // adam updates every row, which a table without a row count cannot do.
  OptimizerSpec adam;
  auto refused = NewKerasUpdater(adam, vars, kSeed);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("dynamic table user/embeddings"), absl::string_view::npos)
      << refused.status();
}

}  // namespace
}  // namespace pstrain
