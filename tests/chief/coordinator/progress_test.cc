#include <cmath>

#include "chief/coordinator/progress_tracker.h"
#include "chief/coordinator/training_budget.h"
#include "chief/evaluation/evaluation.h"
#include "common/config/job_spec.h"
#include "gtest/gtest.h"
#include "tests/test_util/forwarding_env.h"

namespace pstrain {
namespace {

class ManualClockEnv : public ForwardingEnv {
 public:
  int64_t NowMicros() override { return now; }
  void SleepForMicros(int64_t micros) override { now += micros; }
  int64_t now = 1000000;
};

TEST(ProgressTrackerTest, WindowsGiveRateLossAccuracyAndEta) {
  ManualClockEnv env;
  ProgressTracker t(&env, /*num_workers=*/2, /*batch_size=*/64, /*total_steps=*/100, /*steps_per_epoch=*/10, 0);
  RunStepsResponse r;
  r.set_examples(320);  // 10 worker steps of 32
  r.set_loss_sum(160.0);
  r.set_correct(240);
  r.set_max_staleness(3);
  t.OnTrainResult(1, 10, r);
  env.now += 2000000;  // 2 s
  ProgressWindow w = t.TakeWindow();
  EXPECT_EQ(w.global_step, 5);
  EXPECT_DOUBLE_EQ(w.epoch, 0.5);
  EXPECT_DOUBLE_EQ(w.examples_per_second, 160.0);
  EXPECT_DOUBLE_EQ(w.loss, 0.5);
  EXPECT_DOUBLE_EQ(w.accuracy, 0.75);
  EXPECT_DOUBLE_EQ(w.eta_seconds, 2.0 / 5 * 95);
  EXPECT_EQ(w.max_staleness, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(ProgressTracker::FormatLine(w),
            "step 5/100 (epoch 0.50) | 160.0 examples/s | loss 0.5000 | accuracy 75.0% | ETA 38s");
  EXPECT_EQ(ProgressTracker::ToJson(w)["staleness"][1], 3);
  ProgressWindow empty = t.TakeWindow();
  EXPECT_TRUE(ProgressTracker::ToJson(empty)["loss"].is_null());
}

TEST(ProgressTrackerTest, ResumedJobsCountFromTheirStartStep) {
  ManualClockEnv env;
  ProgressTracker t(&env, 2, 64, 100, 10, /*start_step=*/40);
  EXPECT_EQ(t.global_step(), 40);
  EXPECT_EQ(t.worker_steps(), 80);
}

TEST(FormatDurationTest, Units) {
  EXPECT_EQ(FormatDuration(45), "45s");
  EXPECT_EQ(FormatDuration(192), "3m12s");
  EXPECT_EQ(FormatDuration(3720), "1h02m");
}

TEST(TrainingBudgetTest, EpochsCountTheLastPartialBatch) {
  auto spec = LoadJobSpec("cnn");
  ASSERT_TRUE(spec.ok());
  spec->schedule.epochs = 2;
  spec->schedule.steps = 0;
  auto b = ComputeBudget(*spec, 60000, 2);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->steps_per_epoch, 938);
  EXPECT_EQ(b->total_steps, 1876);
}

TEST(TrainingBudgetTest, SyncNeedsABatchThatSplitsEvenly) {
  auto spec = LoadJobSpec("cnn");
  ASSERT_TRUE(spec.ok());
  spec->mode = "sync";
  auto b = ComputeBudget(*spec, 60000, 3);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("multiple of the number of workers (3)"), std::string::npos);
}

TEST(EvalAccumulatorTest, CombinesEachShardOnceAndNamesMissingOnes) {
  EvalAccumulator acc(3);
  EvaluateResponse r;
  r.set_examples(10);
  r.set_loss_sum(5.0);
  r.set_correct(8);
  acc.Add(0, r);
  acc.Add(0, r);  // a duplicate execution of shard 0
  acc.Add(2, r);
  auto missing = acc.Combine(7);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(missing.status().message().find("1"), std::string::npos);
  acc.Add(1, r);
  auto all = acc.Combine(7);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->examples, 30);
  EXPECT_DOUBLE_EQ(all->loss, 0.5);
  EXPECT_DOUBLE_EQ(all->accuracy, 0.8);
}

TEST(ProgressTrackerTest, BinaryModelsShowTheTrainingAucWeightedByExamples) {
  ManualClockEnv env;
  ProgressTracker t(&env, 2, 64, 100, 10, 0, MetricsKind::kBinary);
  RunStepsResponse a, b, one_class;
  a.set_examples(300);
  a.set_loss_sum(150.0);
  a.set_train_auc(0.7);
  b.set_examples(100);
  b.set_loss_sum(50.0);
  b.set_train_auc(0.9);
  one_class.set_examples(100);
  one_class.set_train_auc(std::nan(""));  // undefined: skipped, not averaged in
  t.OnTrainResult(0, 10, a);
  t.OnTrainResult(1, 10, b);
  t.OnTrainResult(1, 10, one_class);
  env.now += 1000000;
  ProgressWindow w = t.TakeWindow();
  EXPECT_DOUBLE_EQ(w.auc, (0.7 * 300 + 0.9 * 100) / 400);
  EXPECT_TRUE(std::isnan(w.accuracy));
  EXPECT_NE(ProgressTracker::FormatLine(w).find("| AUC 0.7500 |"), std::string::npos) << ProgressTracker::FormatLine(w);
  EXPECT_DOUBLE_EQ(ProgressTracker::ToJson(w)["auc"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(t.last_auc(), 0.75);
  ProgressWindow empty = t.TakeWindow();  // no closures: no AUC, the last one kept
  EXPECT_TRUE(std::isnan(empty.auc));
  EXPECT_FALSE(ProgressTracker::ToJson(empty).contains("auc"));
  EXPECT_DOUBLE_EQ(t.last_auc(), 0.75);
}

void SetScores(const std::vector<float>& logits, const std::vector<float>& labels, EvaluateResponse* r) {
  r->set_examples(static_cast<int64_t>(logits.size()));
  r->set_logits(logits.data(), logits.size() * sizeof(float));
  r->set_labels(labels.data(), labels.size() * sizeof(float));
}

TEST(EvalAccumulatorTest, BinaryModelsGetTheExactAucOverAllShards) {
  // Shard 0 alone ranks perfectly, shard 1 alone perfectly; together one pair is out of order:
  // positives {0.9, 0.2}, negatives {0.1, 0.3} -> 3 of 4 pairs right.
  EvalAccumulator acc(2);
  EvaluateResponse s0, s1;
  SetScores({0.9f, 0.1f}, {1.f, 0.f}, &s0);
  SetScores({0.2f, 0.3f}, {1.f, 0.f}, &s1);
  s1.set_loss_sum(1.0);
  acc.Add(1, s1);
  acc.Add(0, s0);
  auto r = acc.Combine(5, MetricsKind::kBinary);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->auc, 0.75);
  EXPECT_DOUBLE_EQ(r->loss, 0.25);
  EXPECT_TRUE(std::isnan(r->accuracy));
  EXPECT_EQ(FormatEval(*r), "test AUC 0.7500, log loss 0.2500 (4 examples)");
  EXPECT_DOUBLE_EQ(EvalJson(*r)["test_auc"].get<double>(), 0.75);
  EXPECT_TRUE(EvalJson(*r)["test_accuracy"].is_null());

  EvalAccumulator short_shard(1);
  EvaluateResponse bad;
  SetScores({0.5f}, {1.f}, &bad);
  bad.set_examples(2);
  short_shard.Add(0, bad);
  EXPECT_EQ(short_shard.Combine(5, MetricsKind::kBinary).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pstrain
