// `pstrain train` on a CTR job whose one field is a dynamic table: the trainer holds no
// [max_rows, dim] tensor, a key's row is made on its first push as DynamicRowInitializer's row plus
// one optimizer step (checked against SGD written out in double, through the model's own
// gradient), admission threshold 2 drops a key's first update, and the TTL evicts rows not pushed
// lately, as one ps shard of the table would.
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/config/json_util.h"
#include "common/plan/variable_planner.h"
#include "common/platform/env.h"
#include "gtest/gtest.h"
#include "ps/store/dynamic_row_initializer.h"
#include "ps/store/dynamic_table_state.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/local/keras_updater.h"
#include "worker/local/local_trainer.h"

namespace pstrain {
namespace {

constexpr int64_t kDim = 4;
constexpr double kLearningRate = 0.5;
constexpr int kExamples = 64;

// Example e: keys 1..4 twelve times each (e < 48, so every one is in at least two batches of 8),
// then 16 keys seen once. Labels: keys 1 and 2 click.
int64_t KeyOf(int e) { return e < 48 ? 1 + e % 4 : 100 + e; }
float LabelOf(int e) { return e < 48 ? (KeyOf(e) <= 2 ? 1.f : 0.f) : static_cast<float>(e % 2); }

class DynamicLocalTrainerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/dynamic_local_trainer"));
    ASSERT_TRUE(Env::Default()->CreateDirs(*dir_).ok());
    std::string lines;
    for (int e = 0; e < kExamples; ++e) absl::StrAppendFormat(&lines, "%d\t%x\n", LabelOf(e) > 0 ? 1 : 0, KeyOf(e));
    ASSERT_TRUE(Env::Default()->WriteFileAtomic(*dir_ + "/train.txt", lines).ok());
  }

  // One dense layer on the field's row: the logit is w . row + b.
  static JobSpec Job(int64_t batch, int64_t steps, int64_t admission, int64_t ttl) {
    auto doc = ParseJson(absl::StrCat(R"({"name": "dyn", "model": {"numeric_inputs": 0,
        "fields": [{"name": "user", "vocabulary_size": 1000, "embedding_dim": 4}],
        "layers": [{"type": "dense", "units": 1}]},
        "optimizer": {"type": "sgd", "learning_rate": 0.5},
        "data": {"dataset": "criteo", "train_files": [")",
                                      *dir_, R"(/train.txt"], "test_files": [")", *dir_, R"(/train.txt"],
        "allow_test_in_train": true}, "batch_size": )",
                                      batch, R"(, "schedule": {"steps": )", steps, R"(}, "seed": 3})"),
                         "test");
    EXPECT_TRUE(doc.ok()) << doc.status();
    auto job = JobSpecFromJson(*doc);
    EXPECT_TRUE(job.ok()) << job.status();
    // The field made dynamic (the keys above are below every size, so they are the same keys
    // whether a reader takes them whole or modulo the vocabulary).
    DynamicTableSpec dynamic;
    dynamic.max_rows = 1 << 20;
    dynamic.admission_threshold = admission;
    dynamic.ttl_steps = ttl;
    job->model.fields[0].dynamic = dynamic;
    auto vars = ModelVariables(job->model);
    EXPECT_TRUE(vars.ok() && (*vars)[0].dynamic.has_value())
        << "ModelVariables must mark a dynamic field's table (VariableSpec::dynamic)";
    return *job;
  }

  static std::unique_ptr<LocalTrainer> Trained(const JobSpec& job) {
    LocalTrainOptions options;
    options.evaluate = false;
    auto t =
        LocalTrainer::Create(Env::Default(), job, options, InitializeVariable, NewKerasUpdater, NewCpuGradientComputer);
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) return nullptr;
    const absl::Status run = (*t)->Run([](const EpochReport&) {});
    EXPECT_TRUE(run.ok()) << run;
    return std::move(*t);
  }

  static DynamicTableState Saved(const LocalTrainer& trainer) {
    auto bytes = trainer.SaveDynamicTable(0);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    auto state = DecodeDynamicTableState(bytes.ok() ? *bytes : "");
    EXPECT_TRUE(state.ok()) << state.status();
    return state.ok() ? *state : DynamicTableState{};
  }

  // Initial rows of the field's keys (the ps's DynamicRowInitializer) and the dense layer's initial
  // kernel and bias.
  struct Start {
    std::map<int64_t, std::vector<double>> rows;
    std::vector<double> w;
    double b = 0;
  };
  static Start Initial(const JobSpec& job) {
    auto vars = ModelVariables(job.model);
    EXPECT_TRUE(vars.ok()) << vars.status();
    Start s;
    auto init =
        DynamicRowInitializer::Create(InitializerToProto((*vars)[0].initializer), job.seed, (*vars)[0].name, kDim);
    EXPECT_TRUE(init.ok()) << init.status();
    for (int e = 0; e < kExamples; ++e) {
      std::vector<float> row(kDim);
      init->Fill(KeyOf(e), absl::Span<float>(row));
      s.rows[KeyOf(e)] = std::vector<double>(row.begin(), row.end());
    }
    Tensor kernel(DType::kFloat32, (*vars)[1].shape), bias(DType::kFloat32, (*vars)[2].shape);
    EXPECT_TRUE(InitializeVariable((*vars)[1], job.seed, &kernel).ok());
    EXPECT_TRUE(InitializeVariable((*vars)[2], job.seed, &bias).ok());
    s.w.assign(kernel.flat().begin(), kernel.flat().end());
    s.b = bias.flat()[0];
    return s;
  }

  // dL/dlogit of example e (log loss from the logit) over the global batch of all examples.
  static std::vector<double> LogitGrads(const Start& s) {
    std::vector<double> g(kExamples);
    for (int e = 0; e < kExamples; ++e) {
      double z = s.b;
      for (int64_t j = 0; j < kDim; ++j) z += s.w[j] * s.rows.at(KeyOf(e))[j];
      g[e] = (1 / (1 + std::exp(-z)) - LabelOf(e)) / kExamples;
    }
    return g;
  }

  // The row of each key after one SGD step with logit gradients `g` and kernel `w`.
  static std::map<int64_t, std::vector<double>> SgdRows(const Start& s, const std::vector<double>& g) {
    std::map<int64_t, std::vector<double>> out = s.rows;
    for (int e = 0; e < kExamples; ++e) {
      for (int64_t j = 0; j < kDim; ++j) out[KeyOf(e)][j] -= kLearningRate * g[e] * s.w[j];
    }
    return out;
  }

  static void ExpectRows(const DynamicTableState& state, const std::map<int64_t, std::vector<double>>& want) {
    ASSERT_EQ(state.keys.size(), want.size());
    ASSERT_EQ(state.dim, kDim);
    for (size_t i = 0; i < state.keys.size(); ++i) {
      ASSERT_TRUE(want.count(state.keys[i])) << state.keys[i];
      for (int64_t j = 0; j < kDim; ++j) {
        EXPECT_NEAR(state.rows[i * state.FloatsPerRow() + j], want.at(state.keys[i])[j], 2e-6)
            << "key " << state.keys[i] << " element " << j;
      }
    }
  }

  static std::string* dir_;
};
std::string* DynamicLocalTrainerTest::dir_ = nullptr;

TEST_F(DynamicLocalTrainerTest, FirstPushMakesTheInitialRowPlusOneSgdStep) {
  const JobSpec job = Job(kExamples, 1, 1, 0);  // one step over every example
  auto trainer = Trained(job);
  ASSERT_NE(trainer, nullptr);
  EXPECT_EQ(trainer->Variables()[0].rank(), 0) << "a dynamic table must not be held as [max_rows, dim]";
  const Start start = Initial(job);
  const DynamicTableState state = Saved(*trainer);
  EXPECT_EQ(state.table_name, "user/embeddings");
  EXPECT_EQ(state.num_slots, 0);  // sgd
  EXPECT_EQ(state.counters.created, 20);
  EXPECT_EQ(state.last_update_steps, std::vector<int64_t>(20, 0));
  ExpectRows(state, SgdRows(start, LogitGrads(start)));
}

TEST_F(DynamicLocalTrainerTest, AdmissionThresholdTwoDropsTheFirstUpdate) {
  const JobSpec job = Job(kExamples, 2, 2, 0);
  auto trainer = Trained(job);
  ASSERT_NE(trainer, nullptr);
  // Step 1: no key is admitted; its update is dropped, the dense layer still moves.
  Start s = Initial(job);
  const std::vector<double> g1 = LogitGrads(s);
  Start after1 = s;
  for (int e = 0; e < kExamples; ++e) {
    for (int64_t j = 0; j < kDim; ++j) after1.w[j] -= kLearningRate * g1[e] * s.rows.at(KeyOf(e))[j];
    after1.b -= kLearningRate * g1[e];
  }
  // Step 2: every key's second push makes its row from the initial one plus this step's update only.
  const DynamicTableState state = Saved(*trainer);
  EXPECT_EQ(state.counters.admission_dropped_updates, 20);
  EXPECT_EQ(state.counters.created, 20);
  ExpectRows(state, SgdRows(after1, LogitGrads(after1)));
}

TEST_F(DynamicLocalTrainerTest, AdmissionAndTtlOverBatchesOfEight) {
  {
    // Threshold 2: the keys seen once never become rows; those in two batches or more do.
    auto trainer = Trained(Job(8, 8, 2, 0));
    ASSERT_NE(trainer, nullptr);
    const DynamicTableState state = Saved(*trainer);
    EXPECT_EQ(state.keys, (std::vector<int64_t>{1, 2, 3, 4}));
    EXPECT_GE(state.counters.admission_dropped_updates, 16 + 4);
  }
  {
    // TTL 2 over 8 steps (0..7): a row last pushed before step 5 is gone after the last push.
    auto trainer = Trained(Job(8, 8, 1, 2));
    ASSERT_NE(trainer, nullptr);
    const DynamicTableState state = Saved(*trainer);
    EXPECT_GT(state.counters.evicted_ttl, 0);
    EXPECT_EQ(state.counters.created - state.counters.evicted_ttl, static_cast<int64_t>(state.keys.size()));
    for (size_t i = 0; i < state.keys.size(); ++i) EXPECT_GE(state.last_update_steps[i], 5) << state.keys[i];
  }
}

// --init_from's rows (InitialDynamicTableState's bytes) restored into the trainer's table: held as
// given, and the step trains from them (SGD written out on the given rows, the initializer's rows
// for the other keys).
TEST_F(DynamicLocalTrainerTest, RestoredStartingRowsAreHeldAndTrainedFrom) {
  const JobSpec job = Job(kExamples, 1, 1, 0);
  LocalTrainOptions options;
  options.evaluate = false;
  auto t = LocalTrainer::Create(Env::Default(), job, options, InitializeVariable, NewKerasUpdater, NewCpuGradientComputer);
  ASSERT_TRUE(t.ok()) << t.status();
  const std::vector<int64_t> keys = {3, 1, 999};  // 999 is in no example
  std::vector<float> rows;
  for (int i = 0; i < 12; ++i) rows.push_back(0.1f * static_cast<float>(i) - 0.5f);
  absl::StatusOr<DynamicTableState> state = InitialDynamicTableState("user/embeddings", kDim, {}, keys, rows);
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_TRUE((*t)->RestoreDynamicTable(0, EncodeDynamicTableState(*state)).ok());
  EXPECT_FALSE((*t)->RestoreDynamicTable(1, EncodeDynamicTableState(*state)).ok()) << "variable 1 is dense";
  DynamicTableState held = Saved(**t);
  EXPECT_EQ(held.keys, (std::vector<int64_t>{1, 3, 999}));
  std::vector<float> by_key(rows.begin() + 4, rows.begin() + 8);  // key 1, then 3, then 999 (SGD: no slots)
  by_key.insert(by_key.end(), rows.begin(), rows.begin() + 4);
  by_key.insert(by_key.end(), rows.begin() + 8, rows.end());
  EXPECT_EQ(held.rows, by_key);
  ASSERT_TRUE((*t)->Run([](const EpochReport&) {}).ok());
  Start start = Initial(job);
  for (size_t k = 0; k < keys.size(); ++k) {
    start.rows[keys[k]] = std::vector<double>(rows.begin() + k * kDim, rows.begin() + (k + 1) * kDim);
  }
  ExpectRows(Saved(**t), SgdRows(start, LogitGrads(start)));
}

TEST_F(DynamicLocalTrainerTest, ReportsEveryStepCountTheRowsHeldAndTrainTheSame) {
  const JobSpec job = Job(8, 8, 1, 0);  // one epoch of 8 steps: 20 keys
  LocalTrainOptions options;
  options.evaluate = false;
  options.report_every_steps = 1;
  auto t = LocalTrainer::Create(Env::Default(), job, options, InitializeVariable, NewKerasUpdater, NewCpuGradientComputer);
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<EpochReport> reports;
  ASSERT_TRUE((*t)->Run([&](const EpochReport& r) { reports.push_back(r); }).ok());
  ASSERT_EQ(reports.size(), 8u);
  for (size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(reports[i].epoch, 1);
    EXPECT_EQ(reports[i].steps, static_cast<int64_t>(i + 1));
    // Admission 1, no TTL or cap: the rows held only grow, by at most a batch's keys per step.
    EXPECT_GE(reports[i].dynamic_rows, i == 0 ? 1 : reports[i - 1].dynamic_rows) << i;
    EXPECT_LE(reports[i].dynamic_rows, 8 * static_cast<int64_t>(i + 1)) << i;
  }
  const DynamicTableState state = Saved(**t);
  EXPECT_EQ(reports.back().dynamic_rows, static_cast<int64_t>(state.keys.size()));
  EXPECT_EQ(state.keys.size(), 20u);
  // Reporting changes nothing that is trained.
  auto once = Trained(job);
  ASSERT_NE(once, nullptr);
  const DynamicTableState want = Saved(*once);
  EXPECT_EQ(state.keys, want.keys);
  EXPECT_EQ(state.rows, want.rows);
}

}  // namespace
}  // namespace pstrain
