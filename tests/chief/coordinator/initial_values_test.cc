// Starting values (--init_from) on the cluster: written as ckpt-0 of the model dir and restored by
// every ps under the plan's partitioning; a checkpoint already in the model dir wins over them.
// Real PsServers in process (FakePs) save and restore the shards.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/checkpoint/checkpoint_index.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/chief/coordinator_fixture.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

class InitialValuesTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    CoordinatorTest::SetUp();
    spec_.partitioner.kind = PartitionerSpec::Kind::kFixedShards;  // dense/kernel [2,1] over both ps
    spec_.partitioner.num_shards = 2;
    options_.init_only = true;  // the ps's own save of what they restored, with no training after it
  }

  // The linear preset's variables with values no initializer gives.
  static std::shared_ptr<const FloatTensorMap> Values(float base) {
    auto values = std::make_shared<FloatTensorMap>();
    (*values)["dense/kernel"] = {{2, 1}, {base + 0.25f, base - 1.5f}};
    (*values)["dense/bias"] = {{1}, {base + 3.0f}};
    return values;
  }

  // The values of `variable` in the model dir's checkpoint at `step`.
  std::vector<float> Saved(int64_t step, const std::string& variable) {
    const std::string dir = absl::StrCat(options_.model_dir, "/ckpt-", step);
    auto index = ReadCheckpointIndex(Env::Default(), dir);
    EXPECT_TRUE(index.ok()) << index.status();
    if (!index.ok()) return {};
    auto rows = ReadCheckpointRows(Env::Default(), dir, *index, variable, 0, -1);
    EXPECT_TRUE(rows.ok()) << rows.status();
    if (!rows.ok()) return {};
    return std::vector<float>(rows->data<float>(), rows->data<float>() + rows->num_elements());
  }
};

TEST_F(InitialValuesTest, EveryPsStartsFromTheValuesPartitionedAsPlanned) {
  options_.model_dir = TempDir("initial_values");
  options_.initial_values = Values(1.0f);
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->state, "initialized");
  for (auto& p : ps_) {
    absl::MutexLock lock(&p->mu);
    EXPECT_TRUE(p->created.empty());
    ASSERT_EQ(p->restored.size(), 1u);
    EXPECT_EQ(p->restored[0].checkpoint_dir(), options_.model_dir + "/ckpt-0");
    ASSERT_EQ(p->saved.size(), 1u);  // init_only's checkpoint: ckpt-0 again, from the ps's shards
  }
  EXPECT_THAT(log(),
              HasSubstr("wrote the starting values (--init_from) of 2 variables as " + options_.model_dir + "/ckpt-0"));
  // The ps's save: dense/kernel in two shards, one per ps, holding the given values.
  auto index = ReadCheckpointIndex(Env::Default(), options_.model_dir + "/ckpt-0");
  ASSERT_TRUE(index.ok()) << index.status();
  std::vector<std::string> shards;
  for (const SavedShard& s : index->shards) shards.push_back(s.shard_name());
  EXPECT_THAT(shards, ::testing::UnorderedElementsAre("dense/kernel/part_0", "dense/kernel/part_1", "dense/bias"));
  EXPECT_EQ(Saved(0, "dense/kernel"), (std::vector<float>{1.25f, -0.5f}));
  EXPECT_EQ(Saved(0, "dense/bias"), (std::vector<float>{4.0f}));
}

TEST_F(InitialValuesTest, ACheckpointInTheModelDirWins) {
  options_.model_dir = TempDir("checkpoint_wins");
  options_.initial_values = Values(1.0f);
  ASSERT_TRUE(Make()->Run().ok());
  Build(2, 2);  // fresh ps, the model dir kept
  options_.initial_values = Values(7.0f);
  auto summary = Make()->Run();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_THAT(log(), HasSubstr("--init_from is not used: resuming from " + options_.model_dir + "/ckpt-0"));
  EXPECT_EQ(Saved(0, "dense/kernel"), (std::vector<float>{1.25f, -0.5f}));
  EXPECT_EQ(Saved(0, "dense/bias"), (std::vector<float>{4.0f}));
}

TEST_F(InitialValuesTest, AMissingOrMisshapenVariableIsRefusedNamingIt) {
  options_.model_dir = TempDir("missing_value");
  auto values = std::make_shared<FloatTensorMap>(*Values(1.0f));
  values->erase("dense/bias");
  options_.initial_values = values;
  auto summary = Make()->Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("no value of shape [1] for variable dense/bias"));
  EXPECT_FALSE(std::filesystem::exists(options_.model_dir + "/ckpt-0"));  // nothing half written

  options_.model_dir = TempDir("misshapen_value");
  values = std::make_shared<FloatTensorMap>(*Values(1.0f));
  (*values)["dense/kernel"] = {{1, 2}, {1.0f, 2.0f}};
  options_.initial_values = values;
  Build(2, 2);
  summary = Make()->Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("no value of shape [2,1] for variable dense/kernel"));
}

TEST_F(InitialValuesTest, NoModelDirIsRefused) {
  options_.init_only = false;
  options_.initial_values = Values(1.0f);
  auto summary = Make()->Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(summary.status().message(), HasSubstr("--init_from needs a model dir"));
}

}  // namespace
}  // namespace pstrain
