#include "common/plan/variable_planner.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/config/job_spec.h"
#include "common/plan/dynamic_row_bytes.h"
#include "common/plan/dynamic_shards.h"
#include "common/plan/memory_budget.h"
#include "common/plan/model_variables.h"
#include "common/plan/plan_format.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

VariableSpec Var(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::kFloat32) {
  return VariableSpec{name, std::move(shape), dtype, InitializerSpec{}};
}

std::vector<int> PsOf(const PlannedVariable& v) {
  std::vector<int> out;
  for (const auto& s : v.shards) out.push_back(s.ps);
  return out;
}

TEST(VariablePlannerTest, FixedShardsRoundRobinOverTwoPs) {
  PartitionerSpec spec;
  spec.kind = PartitionerSpec::Kind::kFixedShards;
  spec.num_shards = 4;
  auto plan = PlanVariables({Var("v", {10})}, spec, 2);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto& shards = plan->variables[0].shards;
  ASSERT_EQ(shards.size(), 4u);
  EXPECT_EQ(shards[0].name, "v/part_0");
  EXPECT_EQ(shards[3].name, "v/part_3");
  EXPECT_EQ(shards[2].row_offset, 6);
  EXPECT_EQ(PsOf(plan->variables[0]), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(plan->ps_bytes, (std::vector<int64_t>{20, 20}));
}

TEST(VariablePlannerTest, BackupsOnTheNextPsCountTowardItsBytes) {
  PartitionerSpec spec;
  spec.kind = PartitionerSpec::Kind::kFixedShards;
  spec.num_shards = 3;
  auto plan = PlanVariables({Var("v", {12})}, spec, 3);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(AddBackups(1, &*plan).ok());
  const auto& shards = plan->variables[0].shards;
  EXPECT_EQ(shards[0].backup_ps, 1);
  EXPECT_EQ(shards[1].backup_ps, 2);
  EXPECT_EQ(shards[2].backup_ps, 0);
  EXPECT_EQ(plan->ps_bytes, (std::vector<int64_t>{32, 32, 32}));
  EXPECT_EQ(plan->backup_bytes, (std::vector<int64_t>{16, 16, 16}));
  const VariablePlanProto proto = VariablePlanToProto(*plan, 7);
  EXPECT_EQ(proto.variables(0).shards(2).ps_task(), 2);
  EXPECT_EQ(proto.variables(0).shards(2).backup_ps(), 0);
}

TEST(VariablePlannerTest, BackupsNeedAnotherPs) {
  auto plan = PlanVariables({Var("v", {12})}, PartitionerSpec{}, 1);
  ASSERT_TRUE(plan.ok());
  absl::Status s = AddBackups(1, &*plan);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("ps_replicas <= num_ps - 1"), std::string::npos) << s;
  EXPECT_TRUE(AddBackups(0, &*plan).ok());
  EXPECT_EQ(plan->variables[0].shards[0].backup_ps, -1);
  EXPECT_FALSE(VariablePlanToProto(*plan, 7).variables(0).shards(0).has_backup_ps());
}

// TensorFlow 1's "mod" partition_strategy for tables: shard i of n holds rows i, i+n, ...; the
// shard sizes are the div split's; dense variables stay div; one shard is plain.
TEST(VariablePlannerTest, ModStrategyForTablesOnly) {
  PartitionerSpec spec;
  spec.kind = PartitionerSpec::Kind::kFixedShards;
  spec.num_shards = 3;
  spec.strategy = "mod";
  VariableSpec table = Var("emb", {11, 4});
  table.sparse = true;
  VariableSpec one = Var("tiny", {2, 4});
  one.sparse = true;
  spec.num_shards = 3;
  auto plan = PlanVariables({table, Var("w", {11, 4}), one}, spec, 2);
  ASSERT_TRUE(plan.ok()) << plan.status();
  spec.strategy = "div";
  auto div = PlanVariables({table, Var("w", {11, 4}), one}, spec, 2);
  ASSERT_TRUE(div.ok());
  const auto& mod_shards = plan->variables[0].shards;
  ASSERT_EQ(mod_shards.size(), 3u);
  std::vector<bool> seen(11);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(mod_shards[i].row_offset, static_cast<int64_t>(i));
    EXPECT_EQ(mod_shards[i].row_stride, 3);
    EXPECT_EQ(mod_shards[i].rows, div->variables[0].shards[i].rows);  // 4, 4, 3 both ways
    EXPECT_EQ(mod_shards[i].ps, div->variables[0].shards[i].ps);
    for (int64_t j = 0; j < mod_shards[i].rows; ++j) {
      const int64_t row = mod_shards[i].row_offset + j * mod_shards[i].row_stride;
      ASSERT_LT(row, 11);
      EXPECT_FALSE(seen[row]);
      seen[row] = true;
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 11);
  for (const auto& s : plan->variables[1].shards) EXPECT_EQ(s.row_stride, 1);  // dense: div
  EXPECT_EQ(plan->variables[1].shards[1].row_offset, 4);
  EXPECT_EQ(plan->ps_bytes, div->ps_bytes);
  const VariablePlanProto proto = VariablePlanToProto(*plan, 1);
  EXPECT_TRUE(proto.variables(0).sparse());
  EXPECT_TRUE(proto.variables(0).shards(2).sparse());
  EXPECT_EQ(proto.variables(0).shards(2).row_stride(), 3);
  EXPECT_FALSE(proto.variables(1).sparse());
}

TEST(VariablePlannerTest, OneCounterAcrossVariables) {
  PartitionerSpec spec;
  spec.kind = PartitionerSpec::Kind::kFixedShards;
  spec.num_shards = 5;
  // [13, 8] -> [3,3,3,2,2] on ps 0,1,2,0,1; the next variable continues at ps 2.
  auto plan = PlanVariables({Var("a", {13, 8}), Var("b", {4}), Var("c", {})}, spec, 3);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(PsOf(plan->variables[0]), (std::vector<int>{0, 1, 2, 0, 1}));
  EXPECT_EQ(plan->variables[0].shards[4].rows, 2);
  EXPECT_EQ(PsOf(plan->variables[1]), (std::vector<int>{2, 0, 1, 2}));
  ASSERT_EQ(plan->variables[2].shards.size(), 1u);  // rank 0: never partitioned
  EXPECT_EQ(plan->variables[2].shards[0].name, "c");
  EXPECT_EQ(plan->variables[2].shards[0].ps, 0);
}

VariableSpec DynamicVar(const std::string& name, int64_t max_rows, int64_t dim) {
  VariableSpec v = Var(name, {max_rows, dim});
  v.initializer = InitializerSpec{"random_uniform"};
  v.sparse = true;
  v.dynamic = DynamicTableSpec{2, 500, max_rows};
  return v;
}

// A dynamic table ignores the partitioner: one shard per ps, shard i on ps i, its cap the table's
// max_rows over the ps count (rounded up); the other variables are placed as if it were not there.
TEST(VariablePlannerTest, DynamicTableGetsOneShardPerPs) {
  PartitionerSpec spec;
  spec.kind = PartitionerSpec::Kind::kFixedShards;
  spec.num_shards = 2;
  auto plan = PlanVariables({Var("a", {4}), DynamicVar("user/embeddings", 10, 8), Var("b", {6})}, spec, 3);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto& shards = plan->variables[1].shards;
  ASSERT_EQ(shards.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(shards[i].name, absl::StrCat("user/embeddings/dyn_", i, "_of_3"));
    EXPECT_EQ(shards[i].name, DynamicShardName("user/embeddings", i, 3));
    EXPECT_EQ(shards[i].ps, i);
    EXPECT_EQ(shards[i].rows, 4);  // ceil(10 / 3)
    EXPECT_EQ(shards[i].row_offset, i);
    EXPECT_EQ(shards[i].row_stride, 3);
    EXPECT_EQ(shards[i].bytes, 4 * 8 * 4);
  }
  // a: ps 0, 1; b continues at ps 2, 0 as without the table.
  EXPECT_EQ(PsOf(plan->variables[0]), (std::vector<int>{0, 1}));
  EXPECT_EQ(PsOf(plan->variables[2]), (std::vector<int>{2, 0}));
  auto without = PlanVariables({Var("a", {4}), Var("b", {6})}, spec, 3);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(PsOf(plan->variables[2]), PsOf(without->variables[1]));
  EXPECT_EQ(plan->ps_bytes, (std::vector<int64_t>{8 + 12 + 128, 8 + 128, 12 + 128}));

  const VariablePlanProto proto = VariablePlanToProto(*plan, 9);
  const VariablePlanProto::Variable& v = proto.variables(1);
  EXPECT_TRUE(v.sparse());
  ASSERT_TRUE(v.has_dynamic());
  EXPECT_EQ(v.dynamic().admission_threshold(), 2);
  EXPECT_EQ(v.dynamic().ttl_steps(), 500);
  EXPECT_EQ(v.dynamic().max_rows(), 10);
  EXPECT_FALSE(proto.variables(0).has_dynamic());
  ASSERT_EQ(v.shards_size(), 3);
  EXPECT_EQ(v.shards(2).ps_task(), 2);
  EXPECT_EQ(v.shards(2).rows(), 4);
  EXPECT_EQ(v.shards(2).row_offset(), 2);
  EXPECT_EQ(v.shards(2).row_stride(), 3);
  EXPECT_TRUE(v.shards(2).sparse());
  EXPECT_EQ(v.shards(2).seed(), 9u);
  EXPECT_EQ(v.shards(2).initializer().type(), "random_uniform");
  // What the chief sends the ps follows from the plan.
  absl::StatusOr<DynamicShardSpecProto> ps_spec = DynamicShardSpecFromPlan(v, 1);
  ASSERT_TRUE(ps_spec.ok()) << ps_spec.status();
  EXPECT_EQ(ps_spec->shard_name(), "user/embeddings/dyn_1_of_3");
  EXPECT_EQ(ps_spec->max_rows(), 4);
  EXPECT_EQ(ps_spec->dim(), 8);
  EXPECT_EQ(ps_spec->admission_threshold(), 2);

  // One ps: one shard of the whole cap; more ps than rows: a row each.
  auto one = PlanVariables({DynamicVar("t", 10, 2)}, spec, 1);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->variables[0].shards.size(), 1u);
  EXPECT_EQ(one->variables[0].shards[0].name, "t/dyn_0_of_1");
  EXPECT_EQ(one->variables[0].shards[0].rows, 10);
  auto many = PlanVariables({DynamicVar("t", 2, 2)}, spec, 5);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->variables[0].shards.size(), 5u);
  EXPECT_EQ(many->variables[0].shards[4].rows, 1);
}

TEST(VariablePlannerTest, DynamicTableHasNoBackupsAndMustBeATable) {
  auto plan = PlanVariables({Var("w", {4}), DynamicVar("user/embeddings", 10, 8)}, PartitionerSpec{}, 2);
  ASSERT_TRUE(plan.ok());
  absl::Status s = AddBackups(1, &*plan);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("dynamic table user/embeddings"), std::string::npos) << s;
  EXPECT_EQ(plan->variables[0].shards[0].backup_ps, -1);  // nothing changed
  EXPECT_TRUE(AddBackups(0, &*plan).ok());

  VariableSpec flat = DynamicVar("t", 10, 8);
  flat.shape = {80};
  auto bad = PlanVariables({flat}, PartitionerSpec{}, 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("variable \"t\" is dynamic but not"), std::string::npos) << bad.status();
}

// A dynamic shard is budgeted full: cap x dim x 4 x (1 + slots) plus cap x the per-row overhead,
// plus its admission filter (the table's threshold is 2); `pstrain plan` shows it as such.
TEST(VariablePlannerTest, DynamicShardBytesCountSlotsAndRowOverhead) {
  EXPECT_EQ(kDynamicRowOverheadBytes, 55);
  const int64_t filter = 4 << 20;  // 4 rows of 2^20 one-byte counters
  EXPECT_EQ(DynamicFilterBytes(2), filter);
  EXPECT_EQ(DynamicFilterBytes(1), 0);
  auto plan = PlanVariables({Var("w", {4}), DynamicVar("user/embeddings", 10, 8)}, PartitionerSpec{}, 2);
  ASSERT_TRUE(plan.ok());
  const int64_t cap = 5, shard = cap * 8 * 4 * (1 + 2) + cap * 55 + filter;  // 2 slots (lazy_adam)
  absl::StatusOr<std::vector<int64_t>> overhead = PsDynamicOverheadBytes(*plan);
  ASSERT_TRUE(overhead.ok());
  EXPECT_EQ(*overhead, (std::vector<int64_t>{cap * 55 + filter, cap * 55 + filter}));
  absl::StatusOr<std::vector<int64_t>> bytes = PsTaskBytes(*plan, 2);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, (std::vector<int64_t>{16 * 3 + shard, shard}));

  const SlotInfo slots{"lazy_adam", 2};
  const nlohmann::json json = PlanToJson(*plan, "div", slots);
  const nlohmann::json& dyn = json["variables"][1]["dynamic"];
  EXPECT_EQ(dyn["max_rows"], 10);
  EXPECT_EQ(dyn["shard_cap_rows"], cap);
  EXPECT_EQ(dyn["placement"], "hash");
  EXPECT_EQ(dyn["shard_budget_bytes"], shard);
  EXPECT_EQ(dyn["admission_filter_bytes"], filter);
  EXPECT_FALSE(json["variables"][0].contains("dynamic"));
  EXPECT_EQ(json["ps_dynamic_overhead_bytes"], (std::vector<int64_t>{cap * 55 + filter, cap * 55 + filter}));
  EXPECT_EQ(json["ps_total_bytes"], *bytes);
  const std::string table = PlanToTable(*plan, "none", slots);
  EXPECT_NE(table.find(absl::StrCat("user/embeddings: dynamic, cap 5 rows per ps (max_rows 10), hash placement, "
                                    "admission_threshold 2, ttl_steps 500; budget per ps ",
                                    shard, " bytes (values and slots of 5 rows + 55 bytes of row overhead each + ",
                                    filter, " bytes of admission filter)")),
            std::string::npos)
      << table;
  EXPECT_NE(table.find(absl::StrCat("ps 1 holds ", shard, " bytes: 160 of values + 320 of lazy_adam slots + ", 275 + filter,
                                    " of dynamic tables' row overhead and admission filters")),
            std::string::npos)
      << table;
  // Checked arithmetic: a cap whose overhead overflows is an error, not a wrapped count.
  plan->variables[1].shards[0].rows = int64_t{1} << 62;
  EXPECT_FALSE(PsDynamicOverheadBytes(*plan).ok());
}

TEST(VariablePlannerTest, UnpartitionedKeepsItsName) {
  auto plan = PlanVariables({Var("w", {6, 1}), Var("b", {1})}, PartitionerSpec{}, 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->variables[0].shards[0].name, "w");
  EXPECT_EQ(plan->variables[1].shards[0].ps, 1);
}

TEST(VariablePlannerTest, ErrorsNameTheVariable) {
  PartitionerSpec spec;
  spec.kind = PartitionerSpec::Kind::kFixedShards;
  spec.num_shards = 2;
  auto empty = PlanVariables({Var("emb", {0, 4})}, spec, 2);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("emb"), std::string::npos);
  EXPECT_FALSE(PlanVariables({Var("x", {2})}, spec, 0).ok());
  EXPECT_FALSE(PlanVariables({Var("x", {2}), Var("x", {3})}, spec, 1).ok());
}

// Invariants every plan must satisfy, over many random shapes and partitioners.
TEST(VariablePlannerTest, RandomPlansCoverEveryRowOnce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    PartitionerSpec spec;
    spec.kind = static_cast<PartitionerSpec::Kind>(rng() % 4);
    spec.num_shards = 1 + rng() % 9;
    spec.min_shard_bytes = 1 + rng() % 5000;
    spec.max_shard_bytes = 1 + rng() % 5000;
    spec.max_shards = rng() % 2 ? -1 : 1 + static_cast<int64_t>(rng() % 8);
    const std::vector<int64_t> shape = {1 + static_cast<int64_t>(rng() % 300), 1 + static_cast<int64_t>(rng() % 20)};
    const int num_ps = 1 + rng() % 4;
    auto plan = PlanVariables({Var("v", shape)}, spec, num_ps);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const auto& shards = plan->variables[0].shards;
    int64_t next_row = 0, min_rows = shape[0], max_rows = 0;
    for (size_t i = 0; i < shards.size(); ++i) {
      EXPECT_EQ(shards[i].row_offset, next_row);
      EXPECT_GT(shards[i].rows, 0);
      EXPECT_EQ(shards[i].ps, static_cast<int>(i % num_ps));
      next_row += shards[i].rows;
      min_rows = std::min(min_rows, shards[i].rows);
      max_rows = std::max(max_rows, shards[i].rows);
    }
    EXPECT_EQ(next_row, shape[0]);
    EXPECT_LE(max_rows - min_rows, 1);
    const int64_t row_bytes = shape[1] * 4;
    if (spec.kind == PartitionerSpec::Kind::kMaxSize && spec.max_shards == -1 && row_bytes <= spec.max_shard_bytes) {
      EXPECT_LE(max_rows * row_bytes, spec.max_shard_bytes) << "max_size exceeded";
    }
    if (spec.kind == PartitionerSpec::Kind::kMinSize && shards.size() > 1) {
      // More shards than one only when there are enough bytes for them.
      EXPECT_GT(shape[0] * row_bytes, static_cast<int64_t>(shards.size() - 1) * spec.min_shard_bytes);
    }
  }
}

TEST(VariablePlannerTest, CnnPresetPlan) {
  auto job = LoadJobSpec("cnn");
  ASSERT_TRUE(job.ok()) << job.status();
  auto vars = ModelVariables(job->model);
  ASSERT_TRUE(vars.ok()) << vars.status();
  auto plan = PlanVariables(*vars, job->partitioner, 2);
  ASSERT_TRUE(plan.ok());
  int64_t total = 0;
  for (int64_t b : plan->ps_bytes) total += b;
  EXPECT_EQ(total, 121930 * 4);  // the model's 121,930 float32 parameters
  const auto proto = VariablePlanToProto(*plan, 42);
  ASSERT_EQ(proto.variables_size(), 8);
  EXPECT_EQ(proto.variables(4).name(), "dense/kernel");
  ASSERT_EQ(proto.variables(4).shards_size(), 2);  // 409,600 bytes / 256 KiB -> 2 shards
  EXPECT_EQ(proto.variables(4).shards(1).row_offset(), 800);
  EXPECT_EQ(proto.variables(4).shards(1).seed(), 42u);
}

}  // namespace
}  // namespace pstrain
