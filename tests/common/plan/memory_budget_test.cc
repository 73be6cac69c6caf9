// Per-task memory budgets: the host's memory as the Env reports it, the default share, and the
// estimates the chief, `pstrain plan` and `pstrain train` check before anything is allocated.
#include "common/plan/memory_budget.h"

#include <map>

#include "common/config/job_presets.h"
#include "common/plan/model_variables.h"
#include "common/plan/variable_planner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util/forwarding_env.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

// An Env whose files are the test's (everything else is missing).
class FakeFilesEnv : public ForwardingEnv {
 public:
  std::map<std::string, std::string> files;
  absl::StatusOr<std::string> ReadFile(const std::string& p) override {
    auto it = files.find(p);
    if (it == files.end()) return absl::NotFoundError(p);
    return it->second;
  }
  bool FileExists(const std::string& p) override { return files.count(p) > 0; }
};

TEST(MemoryBudgetTest, HostMemoryIsMemTotalLoweredByTheCgroupLimit) {
  FakeFilesEnv env;
  env.files["/proc/meminfo"] = "MemFree:   100 kB\nMemTotal:       16384000 kB\nSwapTotal: 0 kB\n";
  EXPECT_EQ(*HostMemoryBytes(&env), int64_t{16384000} * 1024);
  env.files["/sys/fs/cgroup/memory.max"] = "max\n";  // no limit
  EXPECT_EQ(*HostMemoryBytes(&env), int64_t{16384000} * 1024);
  env.files["/sys/fs/cgroup/memory.max"] = "1073741824\n";
  EXPECT_EQ(*HostMemoryBytes(&env), int64_t{1} << 30);
  EXPECT_EQ(*MemoryBudgetBytes(&env, 0), int64_t{1} << 29);  // half
  EXPECT_EQ(*MemoryBudgetBytes(&env, 12345), 12345);         // the flag wins
  EXPECT_FALSE(MemoryBudgetBytes(&env, -1).ok());
  for (const char* broken : {"", "MemTotal: lots kB\n", "MemTotal: 99999999999999999999 kB\n"}) {
    env.files["/proc/meminfo"] = broken;
    EXPECT_FALSE(HostMemoryBytes(&env).ok()) << broken;
    EXPECT_EQ(*MemoryBudgetBytes(&env, 0), kFallbackMemoryBudgetBytes) << broken;
  }
  EXPECT_GT(*HostMemoryBytes(Env::Default()), 0);  // this machine's
}

TEST(MemoryBudgetTest, OverBudgetSaysWhoWhatAndHowToRaise) {
  EXPECT_TRUE(CheckMemoryBudget("ps:0", 100, "values", 100, "raise it").ok());
  absl::Status s = CheckMemoryBudget("ps:1", int64_t{4} << 40, "values and 2 optimizer slots each", int64_t{8} << 30,
                                     "raise --memory_budget_bytes");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("ps:1 would hold 4.0 TiB"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("more than its memory budget of 8.0 GiB"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("raise --memory_budget_bytes"));
}

TEST(MemoryBudgetTest, PsBytesCountOptimizerSlotsWithCheckedArithmetic) {
  VariablePlan plan;
  plan.ps_bytes = {1000, 0, int64_t{1} << 61};
  PlannedVariable v;
  v.variable.dtype = DType::kFloat32;
  v.shards = {{"v/part_0", 0, 250, 1, 1000, 0}, {"v/part_1", 250, 1, 1, int64_t{1} << 61, 2}};
  plan.variables = {v};
  absl::StatusOr<std::vector<int64_t>> bytes = PsTaskBytes(plan, 1);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, (std::vector<int64_t>{2000, 0, int64_t{1} << 62}));
  absl::StatusOr<std::vector<int64_t>> slots = PsSlotBytes(plan, 1);
  EXPECT_EQ(*slots, (std::vector<int64_t>{1000, 0, int64_t{1} << 61}));
  bytes = PsTaskBytes(plan, 2);  // 3 x 2^61 passes 2^62
  ASSERT_FALSE(bytes.ok());
  EXPECT_THAT(std::string(bytes.status().message()), HasSubstr("ps 2's bytes"));
}

TEST(MemoryBudgetTest, ComputeEstimateGrowsWithModelBatchAndData) {
  JobSpec cnn = *JobSpecFromJson(*JobPresetJson("cnn"));
  absl::StatusOr<ComputeBytes> small = EstimateComputeBytes(cnn.model, 64, 70000, 0, false);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->variables, 121930 * 4 * 2);  // values and gradients
  EXPECT_EQ(small->data, int64_t{70000} * (784 + 1) * 4);
  EXPECT_GT(small->activations, 64 * 784 * 4);
  EXPECT_GT(EstimateComputeBytes(cnn.model, 640, 70000, 2, true)->total(), small->total());
  EXPECT_THAT(small->Describe(), HasSubstr("of data"));
  // A model whose activations overflow: [2^31 - 1] units per layer times a huge batch.
  JobSpec wide = cnn;
  wide.model.input_shape = {1 << 30};
  wide.model.layers = {LayerSpec{"dense", "d", (int64_t{1} << 31) - 1}};
  EXPECT_FALSE(EstimateComputeBytes(wide.model, (int64_t{1} << 31) - 1, 0, 0, false).ok());
  EXPECT_EQ(ExamplesInMemory(cnn.data), 70000);
}

// Embedding tables: a worker holds only the rows a step touches; `pstrain train`, which applies the
// updates, holds every table whole with its optimizer slots; the ps tasks hold the plan's shards of
// every table with their slots.
TEST(MemoryBudgetTest, TablesAreCountedWhereTheyAreHeld) {
  JobSpec ctr = *JobSpecFromJson(*JobPresetJson("ctr"));
  const int64_t table_bytes = int64_t{26} * 100000 * 16 * 4;
  absl::StatusOr<ComputeBytes> worker = EstimateComputeBytes(ctr.model, 512, 0, 0, false);
  ASSERT_TRUE(worker.ok()) << worker.status();
  const int64_t step_rows = int64_t{26} * 512 * 16 * 4 * 2;  // values and gradients of 512 rows per table
  const int64_t tower = (int64_t{429} * 512 + 512 + 512 * 256 + 256 + 256 + 1) * 4 * 2;
  EXPECT_EQ(worker->variables, step_rows + tower);
  absl::StatusOr<ComputeBytes> train = EstimateComputeBytes(ctr.model, 1024, 0, 1, true);  // Adagrad
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ(train->variables, table_bytes * 2 + int64_t{26} * 1024 * 16 * 4 * 2 + tower / 2 * 3);
  absl::StatusOr<std::vector<VariableSpec>> vars = ModelVariables(ctr.model);
  ASSERT_TRUE(vars.ok());
  absl::StatusOr<VariablePlan> plan = PlanVariables(*vars, ctr.partitioner, 2);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<std::vector<int64_t>> ps = PsTaskBytes(*plan, 1);
  ASSERT_TRUE(ps.ok());
  EXPECT_EQ((*ps)[0] + (*ps)[1], (table_bytes + tower / 2) * 2);
  // A table too large for the budget is refused before anything starts.
  EXPECT_FALSE(CheckMemoryBudget("/job:ps/task:0", (*ps)[0], "values", table_bytes, "add ps tasks").ok());
}

// A dynamic table counts as its max_rows rows, with the per-row overhead (and its admission
// filter) where it is held whole.
TEST(MemoryBudgetTest, DynamicTablesCountTheirCapacityAndRowOverhead) {
  nlohmann::json doc = *JobPresetJson("ctr");
  doc["model"]["fields"] = {{{"embedding_dim", 16}, {"dynamic", {{"max_rows", 1000}}}}};
  absl::StatusOr<JobSpec> ctr = JobSpecFromJson(doc);
  ASSERT_TRUE(ctr.ok()) << ctr.status();
  const int64_t tower = (int64_t{29} * 512 + 512 + 512 * 256 + 256 + 256 + 1) * 4;
  absl::StatusOr<ComputeBytes> train = EstimateComputeBytes(ctr->model, 64, 0, 1, true);
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ(train->variables, int64_t{1000} * 16 * 4 * 2 + 1000 * 55 + 64 * 16 * 4 * 2 + tower * 3);
  absl::StatusOr<ComputeBytes> worker = EstimateComputeBytes(ctr->model, 64, 0, 1, false);
  ASSERT_TRUE(worker.ok());
  EXPECT_EQ(worker->variables, 64 * 16 * 4 * 2 + tower * 3);

  // With admission, the process holding the table holds its filter too; a worker does not.
  doc["model"]["fields"][0]["dynamic"]["admission_threshold"] = 3;
  absl::StatusOr<JobSpec> admitted = JobSpecFromJson(doc);
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  absl::StatusOr<ComputeBytes> filtered = EstimateComputeBytes(admitted->model, 64, 0, 1, true);
  ASSERT_TRUE(filtered.ok()) << filtered.status();
  EXPECT_EQ(filtered->variables, train->variables + (4 << 20));
  absl::StatusOr<ComputeBytes> filtered_worker = EstimateComputeBytes(admitted->model, 64, 0, 1, false);
  ASSERT_TRUE(filtered_worker.ok());
  EXPECT_EQ(filtered_worker->variables, worker->variables);
}

}  // namespace
}  // namespace pstrain
