// `pstrain train`'s trainer on a CTR job with the ps's initializers and Keras Adagrad: it learns a
// generated set, local replicas give the same weights, and rows of a table that no training
// example touches keep their initial values bit for bit (only touched rows are updated).
#include <set>

#include "absl/strings/str_cat.h"
#include "common/config/json_util.h"
#include "common/platform/env.h"
#include "gtest/gtest.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/data/ctr_dataset.h"
#include "worker/data/ctr_synthetic.h"
#include "worker/local/keras_updater.h"
#include "worker/local/local_trainer.h"

namespace pstrain {
namespace {

class CtrLocalTrainerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/ctr_local_trainer"));
    CtrSyntheticOptions options;
    options.train_examples = 6000;
    options.test_examples = 3000;
    options.vocabulary = 5000;
    ASSERT_TRUE(WriteCtrSyntheticSet(Env::Default(), options, *dir_).ok());
  }
  static JobSpec Job() {
    auto doc = ParseJson(absl::StrCat(R"({"name": "small-ctr", "model": {"numeric_inputs": 13,
        "fields": [{"vocabulary_size": 100000, "embedding_dim": 4, "count": 26}],
        "layers": [{"type": "dense", "units": 16, "activation": "relu"}, {"type": "dense", "units": 1}]},
        "optimizer": {"type": "adagrad", "learning_rate": 0.05, "initial_accumulator_value": 1e-6},
        "data": {"dataset": "criteo", "train_files": [")",
                                      *dir_, R"(/train.txt"], "test_files": [")", *dir_,
                                      R"(/test.txt"]}, "batch_size": 128, "schedule": {"epochs": 3}, "seed": 3})"),
                         "test");
    EXPECT_TRUE(doc.ok()) << doc.status();
    auto job = JobSpecFromJson(*doc);
    EXPECT_TRUE(job.ok()) << job.status();
    return *job;
  }
  static std::unique_ptr<LocalTrainer> Trainer(int replicas, int threads, bool evaluate, int64_t report_every = 0) {
    LocalTrainOptions options;
    options.replicas = replicas;
    options.threads = threads;
    options.evaluate = evaluate;
    options.report_every_steps = report_every;
    auto t = LocalTrainer::Create(Env::Default(), Job(), options, InitializeVariable, NewKerasUpdater,
                                  NewCpuGradientComputer);
    EXPECT_TRUE(t.ok()) << t.status();
    return std::move(*t);
  }
  static std::string* dir_;
};
std::string* CtrLocalTrainerTest::dir_ = nullptr;

TEST_F(CtrLocalTrainerTest, LearnsTheGeneratedSet) {
  auto trainer = Trainer(1, 2, true);
  std::vector<EpochReport> reports;
  ASSERT_TRUE(trainer->Run([&](const EpochReport& r) { reports.push_back(r); }).ok());
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_GT(reports.back().test_auc, 0.65);
  EXPECT_LT(reports.back().test_loss, 0.6);
  EXPECT_GT(reports.back().train_auc, reports.front().train_auc);
  TestMetrics test;
  ASSERT_TRUE(trainer->EvaluateTest(&test).ok());
  EXPECT_EQ(test.examples, 3000);
  EXPECT_DOUBLE_EQ(test.auc, reports.back().test_auc);
}

TEST_F(CtrLocalTrainerTest, ReportsEverySevenStepsSplitEachEpochAndTrainTheSame) {
  auto whole = Trainer(1, 2, true);
  auto windows = Trainer(1, 2, true, 7);
  std::vector<EpochReport> epochs, reports;
  ASSERT_TRUE(whole->Run([&](const EpochReport& r) { epochs.push_back(r); }).ok());
  ASSERT_TRUE(windows->Run([&](const EpochReport& r) { reports.push_back(r); }).ok());
  ASSERT_EQ(epochs.size(), 3u);
  const int64_t per_epoch = whole->steps_per_epoch();  // 6000 / 128: 46, so windows of 7, ..., 7, 4
  ASSERT_EQ(reports.size(), 3u * ((per_epoch + 6) / 7));
  size_t r = 0;
  for (const EpochReport& epoch : epochs) {
    double examples = 0, loss = 0;
    int64_t last_steps = epoch.steps - per_epoch;
    for (; r < reports.size() && reports[r].epoch == epoch.epoch; ++r) {
      EXPECT_EQ(reports[r].steps, std::min(last_steps + 7, epoch.steps)) << "report " << r;
      last_steps = reports[r].steps;
      const double n = reports[r].examples_per_second * reports[r].train_seconds;
      examples += n;
      loss += reports[r].train_loss * n;
      EXPECT_GT(reports[r].test_auc, 0.5) << "every window is evaluated on the test set";
    }
    EXPECT_EQ(last_steps, epoch.steps);
    EXPECT_NEAR(loss / examples, epoch.train_loss, 1e-6 * epoch.train_loss) << "epoch " << epoch.epoch;
    EXPECT_EQ(reports[r - 1].dynamic_rows, -1);
    // The same steps ran: the test figures after each epoch are the same.
    EXPECT_DOUBLE_EQ(reports[r - 1].test_auc, epoch.test_auc) << "epoch " << epoch.epoch;
    EXPECT_DOUBLE_EQ(reports[r - 1].test_loss, epoch.test_loss) << "epoch " << epoch.epoch;
  }
  EXPECT_EQ(r, reports.size());
}

TEST_F(CtrLocalTrainerTest, ReplicasGiveTheSameWeightsAndUntouchedRowsKeepTheirValues) {
  auto one = Trainer(1, 1, false);
  auto two = Trainer(2, 2, false);
  ASSERT_TRUE(one->Run([](const EpochReport&) {}).ok());
  ASSERT_TRUE(two->Run([](const EpochReport&) {}).ok());
  const std::vector<Tensor> a = one->Variables(), b = two->Variables();
  ASSERT_EQ(a.size(), b.size());
  for (size_t v = 0; v < a.size(); ++v) {
    for (int64_t i = 0; i < a[v].num_elements(); ++i) ASSERT_NEAR(a[v].flat()[i], b[v].flat()[i], 1e-5) << v;
  }
  // Field 0's table: the rows its training ids touch moved, every other row is as initialised.
  const JobSpec job = Job();
  auto train = LoadCtrDataset(Env::Default(), job, Split::kTrain, "");
  ASSERT_TRUE(train.ok()) << train.status();
  std::set<int64_t> touched;
  for (int64_t e = 0; e < train->size; ++e) touched.insert(train->ids[e * train->ids_per_example]);
  const VariableSpec table = (*ModelVariables(job.model))[0];
  Tensor initial(DType::kFloat32, table.shape);
  ASSERT_TRUE(InitializeVariable(table, job.seed, &initial).ok());
  int64_t moved = 0, kept = 0;
  for (int64_t row = 0; row < table.shape[0]; ++row) {
    bool same = true;
    for (int64_t j = 0; j < 4; ++j) same &= a[0].flat()[row * 4 + j] == initial.flat()[row * 4 + j];
    if (touched.count(row)) {
      moved += same ? 0 : 1;
    } else {
      ASSERT_TRUE(same) << "row " << row << " was never in a batch but changed";
      ++kept;
    }
  }
  EXPECT_EQ(moved, static_cast<int64_t>(touched.size()));
  EXPECT_GT(kept, 90000);
}

}  // namespace
}  // namespace pstrain
