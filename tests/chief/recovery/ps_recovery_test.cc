// A lost ps brought back into the running job: the worker's signal (common/wire/ps_trouble.h),
// PsRecovery over fake ps, and the coordinator's handling (async partial restore, sync rollback,
// a hung ps found by the health watch, a ps that never returns).
#include "chief/recovery/ps_recovery.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "chief/coordinator/job_protos.h"
#include "common/plan/model_variables.h"
#include "common/plan/variable_planner.h"
#include "common/wire/ps_trouble.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/chief/coordinator_fixture.h"
#include "tests/chief/fake_clients.h"
#include "tests/test_util/sleep_clock_env.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

TEST(PsTroubleTest, TheSignalNamesThePsAndSurvivesTheWorkersPrefix) {
  const absl::Status s = PsTroubleStatus(1, absl::UnavailableError("ps:1 at h:2: connection refused"));
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(s.message(), "ps:1 UNAVAILABLE: ps:1 at h:2: connection refused");
  EXPECT_EQ(PsTroubleIndex(s), 1);
  EXPECT_EQ(PsTroubleIndex(absl::AbortedError(absl::StrCat("worker:0 at h:3: ", s.message()))), 1);
  EXPECT_EQ(PsTroubleIndex(PsTroubleStatus(12, absl::DeadlineExceededError("late"))), 12);
  EXPECT_EQ(PsTroubleIndex(absl::UnavailableError(s.message())), std::nullopt);  // not the worker's signal
  EXPECT_EQ(PsTroubleIndex(absl::AbortedError("ps:x UNAVAILABLE")), std::nullopt);
  EXPECT_EQ(PsTroubleIndex(absl::AbortedError("shard a was re-created")), std::nullopt);
  EXPECT_TRUE(IsPsTrouble(absl::UnavailableError("gone")));
  EXPECT_TRUE(IsPsTrouble(absl::DeadlineExceededError("late")));
  EXPECT_TRUE(IsPsTrouble(absl::AbortedError("shard a was re-created")));
  EXPECT_TRUE(IsPsTrouble(absl::NotFoundError("shard a is not held by ps:1 (it holds 0 shards)")));
  EXPECT_FALSE(IsPsTrouble(absl::NotFoundError("no such file")));
  EXPECT_FALSE(IsPsTrouble(absl::InvalidArgumentError("shape mismatch")));
}

class PsRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto spec = LoadJobSpec("linear");
    ASSERT_TRUE(spec.ok());
    spec_ = *spec;
    auto variables = ModelVariables(spec_.model);
    ASSERT_TRUE(variables.ok());
    auto plan = PlanVariables(*variables, spec_.partitioner, 2);
    ASSERT_TRUE(plan.ok());
    plan_ = VariablePlanToProto(*plan, spec_.seed);
    for (int i = 0; i < 2; ++i) {
      ps_.push_back(std::make_unique<FakePs>(i));
      CreateShardsResponse created;
      auto create = MakeCreateShardsRequest(spec_, plan_, i, 2, true);
      ASSERT_TRUE(create.ok());
      ASSERT_TRUE(ps_[i]->CreateShards(*create, &created).ok());
    }
    options_.poll_interval_ms = 5;
  }
  PsRecovery Make() { return PsRecovery(&env_, {ps_[0].get(), ps_[1].get()}, {}, options_); }
  PsRestoreSource Initializers(int ps) {
    PsRestoreSource from;
    from.create = *MakeCreateShardsRequest(spec_, plan_, ps, 2, true);
    return from;
  }

  testing_util::SleepClockEnv env_;  // the recovery's clock: its polls pass faster than real time
  JobSpec spec_;
  VariablePlanProto plan_;
  PsRecoveryOptions options_;
  std::vector<std::unique_ptr<FakePs>> ps_;
};

TEST_F(PsRecoveryTest, ProbeTellsSilentFromRestartedFromIntact) {
  PsRecovery recovery = Make();
  const std::vector<std::string> shards = ShardNamesOnPs(plan_, 1);
  ASSERT_FALSE(shards.empty());
  EXPECT_EQ(recovery.Probe(1, shards), PsRecovery::State::kIntact);
  ps_[1]->Restart();
  std::string why;
  EXPECT_EQ(recovery.Probe(1, shards, &why), PsRecovery::State::kMissingShards);
  EXPECT_THAT(why, HasSubstr("does not hold shard " + shards[0]));
  ps_[1]->down = true;
  EXPECT_EQ(recovery.Probe(1, shards, &why), PsRecovery::State::kSilent);
  EXPECT_THAT(why, HasSubstr("connection refused"));
}

TEST_F(PsRecoveryTest, SamePsBackWithItsShardsRestoresNothing) {
  PsRecovery recovery = Make();
  ps_[1]->down = true;
  const int64_t lost_at = env_.NowMicros();
  std::thread back([&] {
    // Back once 50 ms have passed on the recovery's clock (its polls move it).
    while (env_.NowMicros() < lost_at + 50000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ps_[1]->down = false;
  });
  bool asked = false;
  auto report = recovery.Recover(1, "silent", 70, lost_at, ShardNamesOnPs(plan_, 1), [&] {
    asked = true;
    return absl::StatusOr<PsRestoreSource>(Initializers(1));
  });
  back.join();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->intact);
  EXPECT_FALSE(asked);
  EXPECT_EQ(report->lost_updates, 0);
  EXPECT_GE(report->pause_seconds, 0.04);
  EXPECT_THAT(report->Describe(), HasSubstr("ps:1 came back with its shards intact"));
  absl::MutexLock lock(&ps_[1]->mu);
  EXPECT_EQ(ps_[1]->created.size(), 1u);
}

TEST_F(PsRecoveryTest, RestartedPsGetsOnlyItsShardsBack) {
  PsRecovery recovery = Make();
  ps_[1]->Restart();
  auto report = recovery.Recover(1, "gone", 70, env_.NowMicros(), ShardNamesOnPs(plan_, 1),
                                 [&] { return absl::StatusOr<PsRestoreSource>(Initializers(1)); });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->intact);
  EXPECT_EQ(report->source, "initializers");
  EXPECT_EQ(report->lost_updates, 70);  // every update since step 0
  EXPECT_EQ(recovery.Probe(1, ShardNamesOnPs(plan_, 1)), PsRecovery::State::kIntact);
  const nlohmann::json j = report->ToJson();
  EXPECT_EQ(j["kind"], "ps_recovery");
  EXPECT_EQ(j["lost_updates"], 70);
  EXPECT_THAT(report->Describe(), HasSubstr("re-initialised from the initializers"));
  absl::MutexLock lock0(&ps_[0]->mu);
  EXPECT_EQ(ps_[0]->created.size(), 1u);  // the other ps is not touched
  EXPECT_TRUE(ps_[0]->restored.empty());
}

TEST_F(PsRecoveryTest, PsThatNeverAnswersFailsNamingItAndTheFlag) {
  options_.timeout_ms = 60;
  PsRecovery recovery = Make();
  ps_[1]->down = true;
  auto report = recovery.Recover(1, "gone", 70, env_.NowMicros(), ShardNamesOnPs(plan_, 1),
                                 [&] { return absl::StatusOr<PsRestoreSource>(Initializers(1)); });
  EXPECT_EQ(report.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(report.status().message(), HasSubstr("lost ps:1 at fake (gone)"));
  EXPECT_THAT(report.status().message(), HasSubstr("--ps_recovery_timeout_secs"));
}

// The coordinator: workers fail closures on ps:1 as real ones do, ps:1 restarts or hangs.
class CoordinatorPsLossTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    CoordinatorTest::SetUp();
    options_.ps_recovery.poll_interval_ms = 5;
    options_.ps_health_interval_ms = 0;
  }
  bool PsSaved(int ps) {
    absl::MutexLock lock(&ps_[ps]->mu);
    return !ps_[ps]->saved.empty();
  }
  std::string Metrics() {
    std::ifstream in(options_.model_dir + "/metrics.jsonl");
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
};

TEST_F(CoordinatorPsLossTest, AsyncRestartedPsComesBackFromTheCheckpointAloneAndTheJobCompletes) {
  options_.model_dir = TempDir("ps_restart");
  spec_.schedule.checkpoint_every_steps = 10;
  workers_[0]->ps_trouble_when = [this] { return PsSaved(1); };
  workers_[0]->ps_trouble_do = [this] { ps_[1]->Restart(); };
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status() << log();
  EXPECT_EQ(summary->global_step, 40);
  EXPECT_TRUE(summary->lost_workers.empty());  // the worker was not the trouble
  EXPECT_TRUE(workers_[0]->ps_trouble_done);
  {
    absl::MutexLock lock(&ps_[1]->mu);
    ASSERT_EQ(ps_[1]->restored.size(), 1u);
    EXPECT_THAT(ps_[1]->restored[0].checkpoint_dir(), HasSubstr(options_.model_dir + "/ckpt-"));
  }
  {
    absl::MutexLock lock(&ps_[0]->mu);
    EXPECT_TRUE(ps_[0]->restored.empty());  // partial recovery: ps:0 keeps its newer state
  }
  EXPECT_THAT(log(), HasSubstr("lost ps:1 at ps:1 at fake"));
  EXPECT_THAT(log(), HasSubstr("its shards restored from " + options_.model_dir + "/ckpt-"));
  EXPECT_THAT(Metrics(), HasSubstr("\"kind\":\"ps_recovery\""));
  EXPECT_THAT(Metrics(), HasSubstr("\"lost_updates\":"));
}

TEST_F(CoordinatorPsLossTest, WithoutACheckpointTheLostShardsAreReinitialised) {
  workers_[0]->ps_trouble_when = [] { return true; };
  workers_[0]->ps_trouble_do = [this] { ps_[1]->Restart(); };
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status() << log();
  EXPECT_EQ(summary->global_step, 40);
  EXPECT_THAT(log(), HasSubstr("re-initialised from the initializers (no checkpoint yet)"));
  absl::MutexLock lock(&ps_[1]->mu);
  EXPECT_EQ(ps_[1]->created.size(), 2u);
}

TEST_F(CoordinatorPsLossTest, PsThatNeverComesBackFailsTheJobNamingTheFlag) {
  options_.ps_recovery.timeout_ms = 100;
  workers_[0]->ps_trouble_when = [] { return true; };
  workers_[0]->ps_trouble_do = [this] { ps_[1]->down = true; };
  auto summary = Make()->Run();
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(summary.status().message(), HasSubstr("lost ps:1 at fake"));
  EXPECT_THAT(summary.status().message(), HasSubstr("--ps_recovery_timeout_secs"));
}

TEST_F(CoordinatorPsLossTest, HungPsIsFoundByTheHealthWatchAndTakenBackIntact) {
  spec_.schedule.steps = 400;
  options_.ps_health_interval_ms = 10;
  for (auto& w : workers_) w->sleep_micros = 1000;
  bool found_first = false;
  std::thread hang([&] {
    while (TotalWorkerSteps() < 40) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ps_[1]->down = true;  // silent, as under SIGSTOP: no answer to the health check
    found_first = WaitForLog("lost ps:1");  // answers again once the health watch found it
    ps_[1]->down = false;
  });
  auto summary = Make()->Run();
  hang.join();
  EXPECT_TRUE(found_first);
  ASSERT_TRUE(summary.ok()) << summary.status() << log();
  EXPECT_EQ(summary->global_step, 400);
  EXPECT_THAT(log(), HasSubstr("lost ps:1"));
  EXPECT_THAT(log(), HasSubstr("ps:1 came back with its shards intact"));
  absl::MutexLock lock(&ps_[1]->mu);
  EXPECT_TRUE(ps_[1]->restored.empty());
}

TEST_F(CoordinatorPsLossTest, SyncModeRollsEveryPsBackAndTheStepFollows) {
  spec_.mode = "sync";
  options_.model_dir = TempDir("ps_sync");
  spec_.schedule.checkpoint_every_steps = 10;
  workers_[0]->ps_trouble_when = [this] { return PsSaved(1); };
  workers_[0]->ps_trouble_do = [this] { ps_[1]->Restart(); };
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status() << log();
  EXPECT_EQ(summary->global_step, 40);
  EXPECT_THAT(log(), HasSubstr("all ps rolled back to " + options_.model_dir + "/ckpt-10"));
  for (auto& p : ps_) {
    absl::MutexLock lock(&p->mu);
    ASSERT_EQ(p->restored.size(), 1u);
    EXPECT_EQ(p->restored[0].checkpoint_dir(), options_.model_dir + "/ckpt-10");
  }
  {
    // Worker 0's round at step 10 failed and ran again after the rollback: every round once.
    absl::MutexLock lock(&workers_[0]->mu);
    std::vector<int64_t> first_steps;
    for (const auto& r : workers_[0]->runs) first_steps.push_back(r.first_step());
    EXPECT_EQ(first_steps, (std::vector<int64_t>{0, 5, 10, 15, 20, 25, 30, 35}));
  }
  // The data went back with the model: every round, before and after the rollback, read its
  // part's batches from the round's step on (one batch per global step), whatever was handed
  // out before the loss.
  for (auto& w : workers_) {
    absl::MutexLock lock(&w->mu);
    for (const auto& r : w->runs) EXPECT_EQ(r.data_position(), r.first_step()) << "data part " << r.data_part();
  }
  EXPECT_THAT(log(), HasSubstr("at data positions 10,10"));
}

}  // namespace
}  // namespace pstrain
