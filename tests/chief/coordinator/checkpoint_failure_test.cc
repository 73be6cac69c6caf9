// A checkpoint that cannot be written does not end the job: the coordinator warns, counts it and
// tries again at the next interval; K failures in a row, or a failed final checkpoint, end it.
// The chief's writes (index.json) fail through an Env; the fake ps write their shards for real.
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/chief/coordinator_fixture.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

// The coordinator's clock, with every write into a checkpoint of a failing step ("ckpt-<step>.tmp-")
// failing as on a full disk.
class FailingCheckpointsEnv : public testing_util::SleepClockEnv {
 public:
  explicit FailingCheckpointsEnv(std::vector<int64_t> failing_steps) {
    for (int64_t step : failing_steps) failing_.push_back(absl::StrCat("/ckpt-", step, ".tmp-"));
  }
  absl::Status WriteFileAtomic(const std::string& p, absl::string_view d) override {
    if (Fails(p)) return absl::ResourceExhaustedError(absl::StrCat("cannot write ", p, ": No space left on device"));
    return SleepClockEnv::WriteFileAtomic(p, d);
  }
  absl::Status WriteFileAtomicParts(const std::string& p, absl::Span<const absl::string_view> parts) override {
    if (Fails(p)) return absl::ResourceExhaustedError(absl::StrCat("cannot write ", p, ": No space left on device"));
    return SleepClockEnv::WriteFileAtomicParts(p, parts);
  }

 private:
  bool Fails(const std::string& path) const {
    for (const std::string& f : failing_) {
      if (absl::StrContains(path, f)) return true;
    }
    return false;
  }
  std::vector<std::string> failing_;
};

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

double CheckpointFailuresMetric(const MetricsRegistry& registry) {
  const std::string text = registry.Render();
  const std::string name = "pstrain_checkpoint_failures_total ";
  const size_t at = text.find("\n" + name);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + 1 + name.size()));
}

class CheckpointFailureTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    CoordinatorTest::SetUp();
    spec_.schedule.checkpoint_every_steps = 10;  // steps 10, 20, 30 and the final 40
    options_.metrics = &registry_;
  }
  MetricsRegistry registry_;
};

TEST_F(CheckpointFailureTest, FailedCheckpointsAreWarnedCountedAndTheJobCompletes) {
  options_.model_dir = TempDir("ckpt_fail_goes_on");
  FailingCheckpointsEnv env({20, 30});
  coordinator_env_ = &env;
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->state, "done");
  EXPECT_EQ(summary->global_step, 40);
  EXPECT_EQ(summary->checkpoint, options_.model_dir + "/ckpt-40");
  // The older checkpoint intact, nothing half-written left.
  EXPECT_EQ(Names(options_.model_dir), (std::set<std::string>{"ckpt-10", "ckpt-40", "eval", "metrics.jsonl", "train"}));
  EXPECT_THAT(log(), HasSubstr("WARNING: the checkpoint " + options_.model_dir +
                               "/ckpt-20 could not be written (failure 1 of at most 3 in a row; the newest, " +
                               options_.model_dir + "/ckpt-10, is kept)"));
  EXPECT_THAT(log(), HasSubstr("/ckpt-30 could not be written (failure 2 of at most 3 in a row"));
  EXPECT_THAT(log(), HasSubstr("No space left on device"));
  EXPECT_EQ(CheckpointFailuresMetric(registry_), 2);
  CheckpointManager manager(Env::Default(), options_.model_dir, 5, {});
  auto found = manager.FindLatest(nullptr, /*remove_incomplete=*/false);
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status();
  EXPECT_EQ((*found)->index.global_step, 40);
}

TEST_F(CheckpointFailureTest, TheKthFailureInARowEndsTheJobNamingTheNewestCheckpoint) {
  options_.model_dir = TempDir("ckpt_fail_in_row");
  options_.max_checkpoint_failures = 2;
  FailingCheckpointsEnv env({20, 30});
  coordinator_env_ = &env;
  auto summary = Make()->Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kAborted);  // exit 1, whatever the write said
  EXPECT_THAT(summary.status().message(), HasSubstr("2 checkpoints in a row could not be written"));
  EXPECT_THAT(summary.status().message(), HasSubstr("the newest, " + options_.model_dir + "/ckpt-10, is kept"));
  EXPECT_THAT(summary.status().message(), HasSubstr(options_.model_dir + "/ckpt-30: checkpoint at step 30 failed: cannot write"));
  EXPECT_EQ(Names(options_.model_dir), (std::set<std::string>{"ckpt-10", "metrics.jsonl", "train"}));
  EXPECT_EQ(CheckpointFailuresMetric(registry_), 2);
}

TEST_F(CheckpointFailureTest, ASuccessResetsTheCountInARow) {
  options_.model_dir = TempDir("ckpt_fail_reset");
  options_.max_checkpoint_failures = 2;
  FailingCheckpointsEnv env({10, 30});
  coordinator_env_ = &env;
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(Names(options_.model_dir), (std::set<std::string>{"ckpt-20", "ckpt-40", "eval", "metrics.jsonl", "train"}));
  EXPECT_THAT(log(), HasSubstr("/ckpt-10 could not be written (failure 1 of at most 2 in a row; none was written"));
  EXPECT_THAT(log(), HasSubstr("/ckpt-30 could not be written (failure 1 of at most 2 in a row"));
}

TEST_F(CheckpointFailureTest, AFailedFinalCheckpointEndsTheJobNamingBoth) {
  options_.model_dir = TempDir("ckpt_fail_final");
  FailingCheckpointsEnv env({40});
  coordinator_env_ = &env;
  auto summary = Make()->Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(summary.status().message(),
              HasSubstr("the final checkpoint " + options_.model_dir + "/ckpt-40 could not be written (the newest, " +
                        options_.model_dir + "/ckpt-30, is kept)"));
  EXPECT_EQ(Names(options_.model_dir),
            (std::set<std::string>{"ckpt-10", "ckpt-20", "ckpt-30", "eval", "metrics.jsonl", "train"}));
}

}  // namespace
}  // namespace pstrain
