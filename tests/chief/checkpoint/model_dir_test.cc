// A model dir whose checkpoints cannot be used, or that holds an earlier run (class: checkpoints
// lost or mixed), and plans beyond the memory budget (class: sizes trusted before allocating),
// through the Coordinator over fake clients.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/chief/coordinator_fixture.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

// Every file under `dir` with its contents, to show a failed start changed nothing.
std::map<std::string, std::string> Tree(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) {
      out[e.path().string()] = "<dir>";
      continue;
    }
    std::stringstream ss;
    ss << std::ifstream(e.path(), std::ios::binary).rdbuf();
    out[e.path().string()] = ss.str();
  }
  return out;
}

void Corrupt(const std::string& ckpt, int how) {
  for (const auto& e : std::filesystem::directory_iterator(ckpt)) {
    const bool index = e.path().filename() == "index.json";
    if (how == 0 && !index) std::filesystem::resize_file(e.path(), 1);  // truncated shard files
    if (how == 1 && index) std::ofstream(e.path(), std::ios::trunc) << std::string(100000, '[');  // nesting
    if (how == 2 && !index) std::filesystem::remove(e.path());                                    // lost shards
    if (how == 3 && index) {  // an edited index promising a huge variable
      std::stringstream ss;
      ss << std::ifstream(e.path()).rdbuf();
      nlohmann::json doc = nlohmann::json::parse(ss.str());
      for (auto& shard : doc["shards"]) shard["full_shape"][0] = 1000000000000;
      std::ofstream(e.path(), std::ios::trunc) << doc.dump();
    }
  }
}

class ModelDirRunsTest : public CoordinatorTest {
 protected:
  // A finished run with checkpoints at steps 20 and 40 and its metrics.
  void FirstRun(const std::string& name) {
    options_.model_dir = TempDir(name);
    spec_.schedule.checkpoint_every_steps = 20;
    ASSERT_TRUE(Make()->Run().ok());
    Build(2, 2);
  }
};

TEST_F(ModelDirRunsTest, CheckpointsThatAllFailStopTheJobAndAreLeftUntouched) {
  for (int how : {0, 1, 2, 3}) {
    FirstRun(absl::StrCat("all_bad_", how));
    Corrupt(options_.model_dir + "/ckpt-20", how);
    Corrupt(options_.model_dir + "/ckpt-40", (how + 1) % 4);
    const auto before = Tree(options_.model_dir);
    absl::StatusOr<JobSummary> again = Make()->Run();
    ASSERT_FALSE(again.ok()) << how;
    EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << how;
    const std::string message(again.status().message());
    EXPECT_THAT(message, HasSubstr(options_.model_dir + "/ckpt-20: "));
    EXPECT_THAT(message, HasSubstr(options_.model_dir + "/ckpt-40: "));
    EXPECT_THAT(message, HasSubstr("--start_over"));
    EXPECT_EQ(Tree(options_.model_dir), before) << "a failed start changed the model dir (case " << how << ")";
    for (auto& ps : ps_) {
      absl::MutexLock l(&ps->mu);
      EXPECT_TRUE(ps->created.empty() && ps->restored.empty() && ps->saved.empty()) << how;
    }
  }
}

TEST_F(ModelDirRunsTest, RestoreFalseOnAnEarlierRunIsRefused) {
  FirstRun("restore_false");
  options_.restore = false;
  const auto before = Tree(options_.model_dir);
  absl::StatusOr<JobSummary> again = Make()->Run();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("would mix the two runs"));
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("ckpt-20, ckpt-40, eval, metrics.jsonl, train"));
  EXPECT_EQ(Tree(options_.model_dir), before);
}

TEST_F(ModelDirRunsTest, StartOverMovesTheEarlierRunAsideWhole) {
  FirstRun("start_over");
  const auto first = Tree(options_.model_dir);
  options_.start_over = true;
  spec_.schedule.steps = 30;
  spec_.schedule.checkpoint_every_steps = 10;
  absl::StatusOr<JobSummary> again = Make()->Run();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->start_step, 0);
  std::vector<std::string> top, aside;
  std::string aside_dir;
  for (const auto& e : std::filesystem::directory_iterator(options_.model_dir)) {
    const std::string name = e.path().filename().string();
    top.push_back(name);
    if (name.rfind("previous-run-", 0) == 0) aside_dir = e.path().string();
  }
  std::sort(top.begin(), top.end());
  EXPECT_EQ(top, (std::vector<std::string>{"ckpt-10", "ckpt-20", "ckpt-30", "eval", "metrics.jsonl",
                                            aside_dir.substr(options_.model_dir.size() + 1), "train"}));
  // The earlier run, byte for byte, under previous-run-<time>/.
  for (const auto& [path, contents] : first) {
    const std::string moved = aside_dir + path.substr(options_.model_dir.size());
    ASSERT_TRUE(std::filesystem::exists(moved)) << moved;
    if (contents != "<dir>") {
      std::stringstream ss;
      ss << std::ifstream(moved, std::ios::binary).rdbuf();
      EXPECT_EQ(ss.str(), contents) << moved;
    }
  }
  // The new run's metrics hold only the new run's steps.
  std::ifstream metrics(options_.model_dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(metrics, line)) EXPECT_LE(nlohmann::json::parse(line)["step"].get<int64_t>(), 30) << line;
}

class CoordinatorMemoryTest : public CoordinatorTest {};

TEST_F(CoordinatorMemoryTest, PlansBeyondTheBudgetAreRefusedBeforeAnythingIsCreated) {
  struct Case {
    int64_t budget;
    const char* who;
    const char* what;
  };
  // The linear preset: 3 floats on the ps (plus Adagrad's accumulator); a worker holds ~65 KB of
  // synthetic data.
  const Case cases[] = {{8, "ps:0 at fake would hold", "optimizer slots"},
                        {1000, "worker:0 at fake would hold", "of data"}};
  for (const Case& c : cases) {
    Build(2, 2);
    options_.memory_budget_bytes = c.budget;
    absl::StatusOr<JobSummary> r = Make()->Run();
    ASSERT_FALSE(r.ok()) << c.budget;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.who));
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.what));
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("--memory_budget_bytes"));
    for (auto& ps : ps_) {
      absl::MutexLock l(&ps->mu);
      EXPECT_TRUE(ps->created.empty());
    }
  }
  Build(2, 2);
  options_.memory_budget_bytes = int64_t{1} << 30;
  EXPECT_TRUE(Make()->Run().ok());
}

}  // namespace
}  // namespace pstrain
