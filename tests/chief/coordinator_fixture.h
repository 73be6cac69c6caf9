// CoordinatorTest: a Coordinator over fake ps (real PsServers in process) and fake workers, on the
// linear preset (40 steps of 5-step closures), with a log the test can read. The coordinator's
// clock is a SleepClockEnv: its retry intervals, polls and timeouts pass faster than real time.
// Shared by the coordinator's test files.
#ifndef PSTRAIN_TESTS_CHIEF_COORDINATOR_FIXTURE_H_
#define PSTRAIN_TESTS_CHIEF_COORDINATOR_FIXTURE_H_

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "chief/coordinator/coordinator.h"
#include "gtest/gtest.h"
#include "tests/chief/fake_clients.h"
#include "tests/test_util/sleep_clock_env.h"

namespace pstrain {

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto spec = LoadJobSpec("linear");
    ASSERT_TRUE(spec.ok());
    spec_ = *spec;
    spec_.schedule.steps = 40;
    spec_.schedule.steps_per_closure = 5;
    spec_.schedule.eval_every_steps = 0;  // only at the end, unless a test says (the default: every epoch)
    Build(2, 2);
    options_.wait.timeout_ms = 2000;
    options_.wait.retry_interval_ms = 10;
    options_.pool.poll_interval_ms = 10;
    options_.progress_interval_ms = 1;
    options_.log = [this](const std::string& line) {
      absl::MutexLock lock(&log_mu_);
      log_ += line + "\n";
    };
  }

  void Build(int num_ps, int num_workers) {
    ps_.clear();
    workers_.clear();
    for (int i = 0; i < num_ps; ++i) ps_.push_back(std::make_unique<FakePs>(i));
    for (int i = 0; i < num_workers; ++i) workers_.push_back(std::make_unique<FakeWorker>(i));
  }

  std::unique_ptr<Coordinator> Make() {
    std::vector<PsClient*> ps;
    std::vector<std::string> addresses;
    for (auto& p : ps_) {
      ps.push_back(p.get());
      addresses.push_back(p->peer());
    }
    std::vector<WorkerClient*> workers;
    for (auto& w : workers_) workers.push_back(w.get());
    return std::make_unique<Coordinator>(coordinator_env_ != nullptr ? coordinator_env_ : &env_, spec_, ps, workers,
                                         addresses, options_);
  }

  int64_t TotalWorkerSteps() {
    int64_t n = 0;
    for (auto& w : workers_) n += w->steps_run;
    return n;
  }

  std::string log() {
    absl::MutexLock lock(&log_mu_);
    return log_;
  }

  // Waits (in real time, up to a minute) until worker `w` has run a closure of data part `part`;
  // false if it never does.
  bool WaitForRun(int w, int part) {
    auto ran = [&] {
      absl::MutexLock lock(&workers_[w]->mu);
      for (const RunStepsRequest& r : workers_[w]->runs) {
        if (r.data_part() == part) return true;
      }
      return false;
    };
    for (int i = 0; i < 60000 && !ran(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return ran();
  }

  // Waits (in real time, up to a minute) until the log holds `text`; false if it never does.
  bool WaitForLog(const std::string& text) {
    for (int i = 0; i < 60000 && log().find(text) == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return log().find(text) != std::string::npos;
  }

  std::string TempDir(const std::string& name) {
    std::string dir = absl::StrCat(::testing::TempDir(), "/coordinator_test_", name, "_", ::getpid());
    std::filesystem::remove_all(dir);
    return dir;
  }

  testing_util::SleepClockEnv env_;  // the coordinator's clock
  Env* coordinator_env_ = nullptr;   // when set (not owned), the coordinator's Env instead of env_
  JobSpec spec_;
  CoordinatorOptions options_;
  std::vector<std::unique_ptr<FakePs>> ps_;
  std::vector<std::unique_ptr<FakeWorker>> workers_;
  absl::Mutex log_mu_;
  std::string log_ ABSL_GUARDED_BY(log_mu_);
};

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_CHIEF_COORDINATOR_FIXTURE_H_
