// The coordinator over fake ps and worker clients, in one process.
#include "chief/coordinator/coordinator.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/chief/coordinator_fixture.h"
#include "tests/chief/fake_clients.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

// Every (part, position) of each part trained by a counted run, across all workers.
std::map<int, std::vector<int64_t>> PositionsByPart(const std::vector<std::unique_ptr<FakeWorker>>& workers) {
  std::map<int, std::vector<int64_t>> out;
  for (auto& w : workers) {
    absl::MutexLock lock(&w->mu);
    for (const auto& r : w->runs) out[r.data_part()].push_back(r.data_position());
  }
  for (auto& [part, positions] : out) std::sort(positions.begin(), positions.end());
  return out;
}


TEST_F(CoordinatorTest, AsyncJobRunsEveryStepAndEvaluatesEachShardOnce) {
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->state, "done");
  EXPECT_EQ(summary->global_step, 40);
  EXPECT_EQ(TotalWorkerSteps(), 40 * 2);  // two worker steps of 32 examples make a global step
  EXPECT_EQ(summary->examples, 40 * 64);
  ASSERT_TRUE(summary->final_eval.has_value());
  EXPECT_EQ(summary->final_eval->examples, 1000);
  EXPECT_DOUBLE_EQ(summary->final_eval->loss, 0.5);
  std::multiset<int> shards;
  for (auto& w : workers_) {
    absl::MutexLock lock(&w->mu);
    shards.insert(w->eval_shards.begin(), w->eval_shards.end());
    EXPECT_EQ(w->configures.size(), 1u);
  }
  EXPECT_EQ(shards, (std::multiset<int>{0, 1, 2, 3}));
  // Every shard of the plan was created exactly once, initialised.
  int created = 0;
  for (auto& p : ps_) {
    absl::MutexLock lock(&p->mu);
    ASSERT_EQ(p->created.size(), 1u);
    EXPECT_TRUE(p->created[0].initialize());
    created += p->created[0].shards_size();
  }
  EXPECT_EQ(created, 2);  // dense/kernel and dense/bias, unpartitioned
  EXPECT_THAT(log(), HasSubstr("step 40/40"));
}

TEST_F(CoordinatorTest, LostWorkerClosuresGoElsewhereAndTheJobCompletes) {
  workers_[1]->runs_before_failing = 2;  // then it stays down
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->global_step, 40);
  EXPECT_EQ(TotalWorkerSteps(), 80);  // the failed closure ran again on worker 0, counted once
  EXPECT_THAT(summary->lost_workers, ::testing::ElementsAre("worker:1 at fake"));
  EXPECT_THAT(log(), HasSubstr("lost worker:1 at fake"));
}

TEST_F(CoordinatorTest, WorkerThatComesBackIsReconfiguredAndUsedAgain) {
  spec_.schedule.steps = 400;
  workers_[1]->fail_next_runs = 1;
  bool lost_first = false;
  std::thread revive([&] {
    lost_first = WaitForLog("lost worker:1 at fake");  // back only once the chief gave up on it
    // ... and once worker 0 has finished a closure, so the job's step has moved when it is reconfigured.
    for (int i = 0; i < 60000; ++i) {
      {
        absl::MutexLock lock(&workers_[0]->mu);
        if (workers_[0]->runs.size() >= 2) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    workers_[1]->down = false;
  });
  auto summary = Make()->Run();
  revive.join();
  EXPECT_TRUE(lost_first);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->global_step, 400);
  absl::MutexLock lock(&workers_[1]->mu);
  ASSERT_EQ(workers_[1]->configures.size(), 2u);
  EXPECT_GT(workers_[1]->configures[1].global_step(), 0);
  EXPECT_GT(workers_[1]->steps_run, 0);
  EXPECT_THAT(log(), HasSubstr("worker:1 at fake is back"));
}

TEST_F(CoordinatorTest, NonRetryableWorkerErrorStopsTheJobNamingTheCause) {
  workers_[0]->run_error = absl::InvalidArgumentError("shape mismatch for dense/kernel: [2,1] vs [3,1]");
  auto summary = Make()->Run();
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(summary.status().message(), HasSubstr("worker:0 at fake"));
  EXPECT_THAT(summary.status().message(), HasSubstr("shape mismatch"));
}

TEST_F(CoordinatorTest, SyncModeSendsEveryRoundToAllWorkers) {
  spec_.mode = "sync";
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->global_step, 40);
  for (auto& w : workers_) {
    absl::MutexLock lock(&w->mu);
    std::vector<int64_t> first_steps;
    for (const auto& r : w->runs) first_steps.push_back(r.first_step());
    EXPECT_EQ(first_steps, (std::vector<int64_t>{0, 5, 10, 15, 20, 25, 30, 35}));
  }
  for (auto& p : ps_) {
    absl::MutexLock lock(&p->mu);
    EXPECT_EQ(p->created[0].mode(), UPDATE_SYNC);
    EXPECT_EQ(p->created[0].num_workers(), 2);
  }
}

TEST_F(CoordinatorTest, SyncModeRerunsALostWorkersPartOnAnotherWorker) {
  spec_.mode = "sync";
  workers_[1]->runs_before_failing = 1;  // then it stays down
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->global_step, 40);
  EXPECT_THAT(log(), HasSubstr("lost worker:1 at fake"));
  EXPECT_THAT(log(), HasSubstr("re-run on another worker"));
  // Both parts' batches 0..39, each once, by sync round (5 steps a closure): worker 0 ran part 1
  // from the round where worker 1 was lost.
  const std::vector<int64_t> rounds = {0, 5, 10, 15, 20, 25, 30, 35};
  auto positions = PositionsByPart(workers_);
  EXPECT_EQ(positions[0], rounds);
  EXPECT_EQ(positions[1], rounds);
  absl::MutexLock lock(&workers_[0]->mu);
  int rescued = 0;
  for (const auto& r : workers_[0]->runs) {
    if (r.data_part() == 1) {
      ++rescued;
      EXPECT_EQ(r.first_step(), r.data_position());  // the same global step as part 0's closure
    }
  }
  EXPECT_EQ(rescued, 7);
}

TEST_F(CoordinatorTest, AsyncPartsAreTrainedOnceEachAcrossAFailure) {
  workers_[1]->runs_before_failing = 2;
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status();
  // Part 1's failed closure (its third) ran again on worker 0 with the same batches: each part's
  // positions are a gapless run of 5-step closures.
  for (auto& [part, positions] : PositionsByPart(workers_)) {
    for (size_t i = 0; i < positions.size(); ++i) EXPECT_EQ(positions[i], 5 * static_cast<int64_t>(i)) << part;
  }
}

TEST_F(CoordinatorTest, SilentWorkerIsLostItsClosureRerunAndItIsTakenBack) {
  spec_.mode = "sync";
  spec_.schedule.steps = 200;
  options_.pool.silence_timeout_ms = 50;
  workers_[1]->runs_before_silence = 1;
  bool rerun_first = false;
  std::thread wake([&] {
    // Silent until the chief gave up on it and re-ran its part elsewhere.
    rerun_first = WaitForLog("lost worker:1 at fake") && WaitForRun(0, /*part=*/1);
    workers_[1]->silent = false;
  });
  auto summary = Make()->Run();
  wake.join();
  EXPECT_TRUE(rerun_first);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->global_step, 200);
  EXPECT_THAT(log(), HasSubstr("lost worker:1 at fake (silent for"));
  EXPECT_THAT(log(), HasSubstr("worker:1 at fake is back"));
  // Every batch of both parts trained; the silent worker's late run of its closure may add one
  // duplicate execution (dropped by the chief; in sync mode the ps ignores its pushes).
  auto positions = PositionsByPart(workers_);
  for (int part = 0; part < 2; ++part) {
    std::set<int64_t> unique(positions[part].begin(), positions[part].end());
    EXPECT_EQ(unique.size(), 40u) << part;
    EXPECT_LE(positions[part].size(), 41u) << part;
  }
  absl::MutexLock lock(&workers_[1]->mu);
  EXPECT_GE(workers_[1]->configures.size(), 2u);  // re-configured when it answered again
}

TEST_F(CoordinatorTest, WaitingTimesOutNamingSilentTasks) {
  options_.wait.timeout_ms = 50;
  workers_[1]->down = true;
  ps_[0]->down = true;
  auto summary = Make()->Run();
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(summary.status().message(), HasSubstr("worker:1 at fake"));
  EXPECT_THAT(summary.status().message(), HasSubstr("ps:0 at fake"));
  EXPECT_THAT(summary.status().message(), ::testing::Not(HasSubstr("worker:0")));
}

TEST_F(CoordinatorTest, CheckpointsKeepTheLastOnesAndARestartResumes) {
  options_.model_dir = TempDir("resume");
  spec_.schedule.checkpoint_every_steps = 10;
  spec_.schedule.keep_checkpoints = 2;
  spec_.schedule.eval_every_steps = 20;
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->checkpoint, options_.model_dir + "/ckpt-40");
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(options_.model_dir)) {
    names.insert(e.path().filename().string());
  }
  // The newest checkpoints, the metrics and the TensorBoard runs (train/, eval/).
  EXPECT_EQ(names, (std::set<std::string>{"ckpt-30", "ckpt-40", "eval", "metrics.jsonl", "train"}));
  for (auto& p : ps_) {
    absl::MutexLock lock(&p->mu);
    std::vector<int64_t> steps;
    for (const auto& s : p->saved) steps.push_back(s.global_step());
    EXPECT_EQ(steps, (std::vector<int64_t>{10, 20, 30, 40}));
  }
  EXPECT_THAT(log(), HasSubstr("evaluation at step 20"));

  // A crash left a temporary directory and an unfinished step directory: both are ignored.
  std::filesystem::create_directories(options_.model_dir + "/ckpt-50.tmp-999");
  std::filesystem::create_directories(options_.model_dir + "/ckpt-45");
  spec_.schedule.steps = 60;
  Build(2, 2);
  auto saved = DataPositions::Load(Env::Default(), options_.model_dir + "/ckpt-40", 2);
  ASSERT_TRUE(saved.ok() && saved->has_value()) << saved.status();
  EXPECT_EQ((**saved)[0] + (**saved)[1], 80);  // every worker step of the first run
  auto resumed = Make()->Run();
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  // Each part's stream goes on where the checkpoint left it, without a gap or a repeat.
  for (auto& [part, positions] : PositionsByPart(workers_)) {
    for (size_t i = 0; i < positions.size(); ++i) {
      EXPECT_EQ(positions[i], (**saved)[part] + 5 * static_cast<int64_t>(i)) << "part " << part;
    }
  }
  EXPECT_THAT(log(), HasSubstr("resumed data positions"));
  EXPECT_EQ(resumed->start_step, 40);
  EXPECT_EQ(resumed->global_step, 60);
  EXPECT_EQ(TotalWorkerSteps(), 20 * 2);
  for (auto& p : ps_) {
    absl::MutexLock lock(&p->mu);
    EXPECT_TRUE(p->created.empty());
    ASSERT_EQ(p->restored.size(), 1u);
    EXPECT_EQ(p->restored[0].checkpoint_dir(), options_.model_dir + "/ckpt-40");
  }
  EXPECT_THAT(log(), HasSubstr("ignoring incomplete checkpoint " + options_.model_dir + "/ckpt-50.tmp-999"));
  EXPECT_THAT(log(), HasSubstr("ignoring checkpoint " + options_.model_dir + "/ckpt-45"));
  EXPECT_THAT(log(), HasSubstr("resumed from " + options_.model_dir + "/ckpt-40 at step 40"));
  EXPECT_FALSE(std::filesystem::exists(options_.model_dir + "/ckpt-50.tmp-999"));
}

TEST_F(CoordinatorTest, StopRequestCheckpointsAndReturnsStopped) {
  options_.model_dir = TempDir("stop");
  spec_.schedule.steps = 100000;
  auto coordinator = Make();
  std::thread stopper([&] {
    while (TotalWorkerSteps() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    coordinator->RequestStop();
  });
  auto summary = coordinator->Run();
  stopper.join();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->state, "stopped");
  EXPECT_LT(summary->global_step, 100000);
  EXPECT_EQ(summary->checkpoint, absl::StrCat(options_.model_dir, "/ckpt-", summary->global_step));
  EXPECT_FALSE(summary->final_eval.has_value());
}

}  // namespace
}  // namespace pstrain

namespace pstrain {
namespace {

TEST_F(CoordinatorTest, CorruptCheckpointIsSkippedForTheOneBefore) {
  options_.model_dir = TempDir("corrupt");
  spec_.schedule.checkpoint_every_steps = 20;
  ASSERT_TRUE(Make()->Run().ok());
  // Flip bytes in every data file of the newest checkpoint: it must not verify any more.
  for (const auto& e : std::filesystem::directory_iterator(options_.model_dir + "/ckpt-40")) {
    if (e.path().filename() == "index.json") continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-4, std::ios::end);
    f.write("\x7f\x7f\x7f\x7f", 4);
  }
  CheckpointManager manager(Env::Default(), options_.model_dir, 5, {});
  std::vector<std::string> warnings;
  auto found = manager.FindLatest(&warnings);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->dir, options_.model_dir + "/ckpt-20");
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_THAT(warnings[0], HasSubstr("ignoring checkpoint " + options_.model_dir + "/ckpt-40"));
  // Kept, but out of the way of the resumed run's saves and pruning.
  EXPECT_THAT(warnings[1], HasSubstr("moved the unusable checkpoint " + options_.model_dir + "/ckpt-40 aside"));
  EXPECT_TRUE(std::filesystem::exists(options_.model_dir + "/ckpt-40.unusable/index.json"));
  EXPECT_FALSE(std::filesystem::exists(options_.model_dir + "/ckpt-40"));
}

}  // namespace
}  // namespace pstrain

namespace pstrain {
namespace {

TEST(WorkerPoolTest, RestartedWorkerIsRetryable) {
  EXPECT_TRUE(IsRetryableWorkerError(absl::UnavailableError("Socket closed")));
  EXPECT_TRUE(IsRetryableWorkerError(absl::DeadlineExceededError("late")));
  EXPECT_TRUE(IsRetryableWorkerError(absl::FailedPreconditionError("worker:1 is not configured yet")));
  EXPECT_FALSE(IsRetryableWorkerError(absl::FailedPreconditionError("protocol version mismatch")));
  EXPECT_FALSE(IsRetryableWorkerError(absl::InvalidArgumentError("shape mismatch")));
}

}  // namespace
}  // namespace pstrain

namespace pstrain {
namespace {

TEST_F(CoordinatorTest, CsvJobWithoutTestDataTrainsWithoutEvaluating) {
  const std::string dir = TempDir("csv");
  std::filesystem::create_directories(dir);
  {
    std::ofstream csv(dir + "/train.csv");
    for (int i = 0; i < 128; ++i) csv << i * 0.01 << "," << i * 0.02 << "," << i * 0.03 << "\n";
  }
  spec_.data.dataset = "csv";
  spec_.data.train_file = dir + "/train.csv";
  spec_.schedule.eval_every_steps = 10;
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->global_step, 40);
  EXPECT_FALSE(summary->final_eval.has_value());
  for (auto& w : workers_) {
    absl::MutexLock lock(&w->mu);
    EXPECT_TRUE(w->eval_shards.empty());
  }
  EXPECT_THAT(log(), HasSubstr("no test data"));
}

}  // namespace
}  // namespace pstrain
