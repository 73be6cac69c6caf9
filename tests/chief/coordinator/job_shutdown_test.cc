#include "chief/coordinator/job_shutdown.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Records the Shutdown it gets; `fail` makes it answer like a task that is already gone.
class RecordingWorker : public WorkerClient {
 public:
  RecordingWorker(std::string peer, bool fail) : peer_(std::move(peer)), fail_(fail) {}
  std::string peer() const override { return peer_; }
  absl::Status Handshake(const HandshakeRequest&, HandshakeResponse*, int64_t) override { return absl::OkStatus(); }
  absl::Status Configure(const ConfigureRequest&, ConfigureResponse*, int64_t) override { return absl::OkStatus(); }
  absl::Status RunSteps(const RunStepsRequest&, RunStepsResponse*, int64_t) override { return absl::OkStatus(); }
  absl::Status Evaluate(const EvaluateRequest&, EvaluateResponse*, int64_t) override { return absl::OkStatus(); }
  absl::Status Shutdown(const ShutdownRequest& request, ShutdownResponse*, int64_t timeout_ms) override {
    got = request;
    timeout = timeout_ms;
    return fail_ ? absl::UnavailableError("connection refused") : absl::OkStatus();
  }
  ShutdownRequest got;
  int64_t timeout = 0;

 private:
  std::string peer_;
  bool fail_;
};

// A ps client that keeps the interface's default Shutdown (an in-process ps has no process to stop).
class DefaultPs : public PsClient {
 public:
  std::string peer() const override { return "ps:0"; }
  absl::Status Handshake(const HandshakeRequest&, HandshakeResponse*) override { return absl::OkStatus(); }
  absl::Status CreateShards(const CreateShardsRequest&, CreateShardsResponse*) override { return absl::OkStatus(); }
  absl::Status Pull(const PullRequest&, PullResponse*) override { return absl::OkStatus(); }
  absl::Status Push(const PushRequest&, PushResponse*) override { return absl::OkStatus(); }
  absl::Status Save(const SaveRequest&, SaveResponse*) override { return absl::OkStatus(); }
  absl::Status Restore(const RestoreRequest&, RestoreResponse*) override { return absl::OkStatus(); }
  absl::Status GetStats(const PsStatsRequest&, PsStatsResponse*) override { return absl::OkStatus(); }
};

TEST(JobShutdownTest, TellsEveryTaskAndReportsWhoCouldNotBeTold) {
  RecordingWorker alive("worker:0", false), gone("worker:1", true);
  DefaultPs ps;
  std::vector<std::string> lines =
      TellTasksJobEnded({&ps}, {&alive, &gone}, "chief:0", "shape mismatch on dense/kernel", JobEnd::kFailed, 1500);
  EXPECT_EQ(alive.got.reason(), "shape mismatch on dense/kernel");
  EXPECT_EQ(alive.got.caller(), "chief:0");
  EXPECT_EQ(alive.timeout, 1500);
  EXPECT_FALSE(alive.got.job_done());
  EXPECT_EQ(gone.got.reason(), "shape mismatch on dense/kernel");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "told worker:0 that the job failed");
  EXPECT_THAT(lines[1], HasSubstr("could not tell worker:1 that the job failed (connection refused)"));
  EXPECT_THAT(lines[2], HasSubstr("could not tell ps:0"));
  EXPECT_THAT(lines[2], HasSubstr("cannot be shut down remotely"));
}

TEST(JobShutdownTest, ADoneJobSaysSo) {
  RecordingWorker alive("worker:0", false);
  std::vector<std::string> lines = TellTasksJobEnded({}, {&alive}, "chief:0", "done at step 40", JobEnd::kDone, 1500);
  EXPECT_TRUE(alive.got.job_done());
  EXPECT_EQ(alive.got.reason(), "done at step 40");
  EXPECT_THAT(lines, ElementsAre("told worker:0 that the job is done"));
}

}  // namespace
}  // namespace pstrain
