// The chief's requests for dynamic tables: CreateShards / Restore built from a plan, probes and the
// recovery of a lost ps holding a dynamic shard, and --init_from refusing one.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "chief/checkpoint/checkpoint_manager.h"
#include "chief/coordinator/job_protos.h"
#include "chief/recovery/ps_recovery.h"
#include "common/plan/dynamic_shards.h"
#include "common/platform/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/chief/checkpoint/dynamic_tables_fixture.h"

namespace pstrain {
namespace dynamic_tables_testing {
namespace {

using ::testing::HasSubstr;

TEST(DynamicShardRequestsTest, EachPsGetsItsDynamicShardsAndNoneAmongTheDenseShards) {
  const VariablePlanProto plan = Plan(2);
  for (int ps = 0; ps < 2; ++ps) {
    absl::StatusOr<CreateShardsRequest> create = MakeCreateShardsRequest(Spec(), plan, ps, 2, true);
    absl::StatusOr<RestoreRequest> restore = MakeRestoreRequest(Spec(), plan, ps, 2, "/ckpt");
    ASSERT_TRUE(create.ok()) << create.status();
    ASSERT_TRUE(restore.ok()) << restore.status();
    absl::StatusOr<DynamicShardSpecProto> expected = DynamicShardSpecFromPlan(plan.variables(1), ps);
    ASSERT_TRUE(expected.ok());
    ASSERT_EQ(create->dynamic_shards_size(), 1);
    ASSERT_EQ(restore->dynamic_shards_size(), 1);
    EXPECT_EQ(create->dynamic_shards(0).SerializeAsString(), expected->SerializeAsString());
    EXPECT_EQ(restore->dynamic_shards(0).SerializeAsString(), expected->SerializeAsString());
    EXPECT_EQ(create->dynamic_shards(0).shard_index(), ps);
    EXPECT_EQ(create->dynamic_shards(0).num_shards(), 2);
    EXPECT_EQ(create->dynamic_shards(0).max_rows(), 1500);
    EXPECT_EQ(create->dynamic_shards(0).ttl_steps(), 50);
    EXPECT_EQ(restore->checkpoint_dir(), "/ckpt");
    // The dense shards are the dense variable's only.
    ASSERT_EQ(create->shards_size(), 1);
    ASSERT_EQ(restore->shards_size(), 1);
    EXPECT_EQ(create->shards(0).shard_name(), absl::StrCat("dense/kernel/part_", ps));
    EXPECT_EQ(restore->shards(0).shard_name(), absl::StrCat("dense/kernel/part_", ps));
    for (const ShardSpecProto& s : ShardsOnPs(plan, ps)) EXPECT_EQ(s.variable_name(), "dense/kernel");
  }
}

TEST(DynamicShardRequestsTest, AMalformedDynamicTableInThePlanIsAnErrorNamingIt) {
  VariablePlanProto plan = Plan(2);
  plan.mutable_variables(1)->mutable_shape()->RemoveLast();  // not [rows, dim]
  absl::StatusOr<CreateShardsRequest> create = MakeCreateShardsRequest(Spec(), plan, 0, 2, true);
  ASSERT_FALSE(create.ok());
  EXPECT_THAT(create.status().message(), HasSubstr(kTable));
  EXPECT_FALSE(MakeRestoreRequest(Spec(), plan, 1, 2, "/ckpt").ok());
}

TEST(DynamicShardRequestsTest, APsHoldingItsDynamicShardsProbesIntact) {
  const VariablePlanProto plan = Plan(2);
  Cluster cluster(2);
  for (int i = 0; i < 2; ++i) {
    CreateShardsResponse created;
    ASSERT_TRUE(cluster.ps(i)->CreateShards(*MakeCreateShardsRequest(Spec(), plan, i, 2, true), &created).ok());
  }
  PsRecovery recovery(Env::Default(), cluster.clients(), {}, PsRecoveryOptions());
  for (int i = 0; i < 2; ++i) {
    const std::vector<std::string> names = ShardNamesOnPs(plan, i);
    EXPECT_EQ(names, (std::vector<std::string>{absl::StrCat("dense/kernel/part_", i), DynamicShardName(kTable, i, 2)}));
    std::string why;
    EXPECT_EQ(recovery.Probe(i, names, &why), PsRecovery::State::kIntact) << why;
  }
  // A fresh ps lacks them.
  Cluster fresh(1);
  PsRecovery fresh_recovery(Env::Default(), fresh.clients(), {}, PsRecoveryOptions());
  std::string why;
  EXPECT_EQ(fresh_recovery.Probe(0, {DynamicShardName(kTable, 0, 2)}, &why), PsRecovery::State::kMissingShards);
  EXPECT_THAT(why, HasSubstr(DynamicShardName(kTable, 0, 2)));
}

TEST_F(DynamicCheckpointTest, ALostPsGetsItsDynamicShardBackFromTheNewestCheckpoint) {
  const std::string model_dir = TempDir("lost_ps");
  const VariablePlanProto plan = Plan(2);
  Cluster cluster(2);
  Create(&cluster, plan);
  cluster.PushKeys(Keys(0, 100), 1);
  CheckpointManager manager(env_, model_dir, 2, cluster.clients());
  ASSERT_TRUE(manager.Save(10, "{}").ok());
  const std::vector<int64_t> saved = cluster.Rows();
  cluster.PushKeys(Keys(100, 40), 2);  // rows made after the checkpoint: lost with ps:1
  const std::vector<int64_t> before_loss = cluster.Rows();
  ASSERT_GT(before_loss[1], saved[1]);

  cluster.Restart(1);
  PsRecovery recovery(env_, cluster.clients(), {}, PsRecoveryOptions());
  absl::StatusOr<PsRecoveryReport> report = recovery.Recover(
      1, "killed", 20, env_->NowMicros(), ShardNamesOnPs(plan, 1), [&]() -> absl::StatusOr<PsRestoreSource> {
        std::vector<std::string> warnings;
        ASSIGN_OR_RETURN(std::optional<FoundCheckpoint> found, manager.FindLatest(&warnings, false));
        PsRestoreSource from;
        if (!found.has_value()) return absl::NotFoundError("no checkpoint");
        from.checkpoint_dir = found->dir;
        from.checkpoint_step = found->index.global_step;
        ASSIGN_OR_RETURN(from.restore, MakeRestoreRequest(Spec(), plan, 1, 2, from.checkpoint_dir));
        return from;
      });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->intact);
  EXPECT_EQ(report->source, model_dir + "/ckpt-10");
  const std::vector<int64_t> after = cluster.Rows();
  EXPECT_EQ(after[1], saved[1]);        // back as saved
  EXPECT_EQ(after[0], before_loss[0]);  // the other ps keeps its newer rows
  std::string why;
  EXPECT_EQ(recovery.Probe(1, ShardNamesOnPs(plan, 1), &why), PsRecovery::State::kIntact) << why;
}

TEST_F(DynamicCheckpointTest, StartingValuesRefuseADynamicTable) {
  const std::string model_dir = TempDir("init_from");
  CheckpointManager manager(env_, model_dir, 2, {});
  FloatTensorMap values;
  values["dense/kernel"] = FloatTensor{{6, 2}, std::vector<float>(12, 0.5f)};
  absl::StatusOr<std::string> dir = manager.SaveValues(0, "{}", Plan(2), values);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dir.status().message(), HasSubstr(absl::StrCat("dynamic table ", kTable)));
}

}  // namespace
}  // namespace dynamic_tables_testing
}  // namespace pstrain
