// The chief's side of ps_replicas: the plan after a lost ps, and the failover's calls (Promote on
// every other ps, Reassign on every worker) with their errors.
#include "chief/recovery/replica_failover.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

VariablePlanProto Plan(int num_ps, bool backups) {
  VariablePlanProto plan;
  plan.set_num_ps(num_ps);
  auto* v = plan.add_variables();
  v->set_name("v");
  for (int i = 0; i < 4; ++i) {
    ShardSpecProto* s = v->add_shards();
    s->set_shard_name("v/part_" + std::to_string(i));
    s->set_ps_task(i % num_ps);
    if (backups) s->set_backup_ps((i + 1) % num_ps);
  }
  return plan;
}

TEST(ReplicaFailoverTest, LostShardsMoveToTheirBackups) {
  auto plan = PlanAfterLoss(Plan(3, true), 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto& shards = plan->variables(0).shards();
  // part_1 lived on ps:1 (backup ps:2); part_0 was backed up on ps:1.
  EXPECT_EQ(shards[1].ps_task(), 2);
  EXPECT_FALSE(shards[1].has_backup_ps());
  EXPECT_EQ(shards[0].ps_task(), 0);
  EXPECT_FALSE(shards[0].has_backup_ps());
  EXPECT_EQ(shards[2].ps_task(), 2);
  EXPECT_EQ(shards[2].backup_ps(), 0);
  EXPECT_EQ(PrimariesOn(*plan, 1), 0);
  EXPECT_EQ(PrimariesOn(*plan, 2), 2);
}

TEST(ReplicaFailoverTest, AReturnedPsBacksUpEveryShardWithoutABackup) {
  auto lost = PlanAfterLoss(Plan(2, true), 1);
  ASSERT_TRUE(lost.ok());
  const VariablePlanProto back = PlanWithBackupsOn(*lost, 1);
  for (const ShardSpecProto& s : back.variables(0).shards()) {
    EXPECT_EQ(s.ps_task(), 0);
    EXPECT_EQ(s.backup_ps(), 1);
  }
  EXPECT_EQ(BackupsOf(back, 0, 1).size(), 4u);
  EXPECT_TRUE(BackupsOf(back, 1, 0).empty());
}

TEST(ReplicaFailoverTest, NoBackupNoPromotion) {
  auto plan = PlanAfterLoss(Plan(2, false), 0);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(), HasSubstr("v/part_0 of lost ps:0 has no backup"));
  EXPECT_EQ(PlanAfterLoss(Plan(2, true), 5).status().code(), absl::StatusCode::kInvalidArgument);
}

class RecordingPs : public PsClient {
 public:
  explicit RecordingPs(int index, absl::Status answer = absl::OkStatus()) : index_(index), answer_(answer) {}
  std::string peer() const override { return "ps:" + std::to_string(index_); }
  absl::Status Handshake(const HandshakeRequest&, HandshakeResponse*) override { return absl::OkStatus(); }
  absl::Status Pull(const PullRequest&, PullResponse*) override { return absl::OkStatus(); }
  absl::Status Push(const PushRequest&, PushResponse*) override { return absl::OkStatus(); }
  absl::Status Save(const SaveRequest&, SaveResponse*) override { return absl::OkStatus(); }
  absl::Status Restore(const RestoreRequest&, RestoreResponse*) override { return absl::OkStatus(); }
  absl::Status GetStats(const PsStatsRequest&, PsStatsResponse*) override { return absl::OkStatus(); }
  absl::Status CreateShards(const CreateShardsRequest& request, CreateShardsResponse*) override {
    created.push_back(request);
    return absl::OkStatus();
  }
  absl::Status AttachBackup(const AttachBackupRequest& request, AttachBackupResponse*) override {
    attached.push_back(request);
    return answer_;
  }
  std::vector<CreateShardsRequest> created;
  std::vector<AttachBackupRequest> attached;
  absl::Status Promote(const PromoteRequest& request, PromoteResponse* response) override {
    lost.push_back(request.lost_ps());
    response->add_promoted("a");
    response->add_unbacked("b");
    return answer_;
  }
  std::vector<int> lost;

 private:
  int index_;
  absl::Status answer_;
};

class RecordingWorker : public WorkerClient {
 public:
  explicit RecordingWorker(absl::Status answer = absl::OkStatus()) : answer_(answer) {}
  std::string peer() const override { return "worker:x"; }
  absl::Status Handshake(const HandshakeRequest&, HandshakeResponse*, int64_t) override { return absl::OkStatus(); }
  absl::Status Configure(const ConfigureRequest&, ConfigureResponse*, int64_t) override { return absl::OkStatus(); }
  absl::Status Reassign(const ReassignRequest& request, ReassignResponse*, int64_t) override {
    plans.push_back(request.plan());
    return answer_;
  }
  absl::Status RunSteps(const RunStepsRequest&, RunStepsResponse*, int64_t) override { return absl::OkStatus(); }
  absl::Status Evaluate(const EvaluateRequest&, EvaluateResponse*, int64_t) override { return absl::OkStatus(); }
  std::vector<VariablePlanProto> plans;

 private:
  absl::Status answer_;
};

TEST(ReplicaFailoverTest, PromotesOnOtherPsThenReroutesWorkers) {
  RecordingPs ps0(0), ps1(1), ps2(2);
  RecordingWorker w0, w1(absl::UnavailableError("worker gone"));
  auto plan = PlanAfterLoss(Plan(3, true), 1);
  ASSERT_TRUE(plan.ok());
  auto report = FailOver(1, *plan, {&ps0, &ps1, &ps2}, {&w0, &w1}, Env::Default(), 1000);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(ps0.lost, std::vector<int>{1});
  EXPECT_TRUE(ps1.lost.empty());  // the lost ps is not called
  EXPECT_EQ(ps2.lost, std::vector<int>{1});
  EXPECT_EQ(report->promoted, 2);
  EXPECT_EQ(report->unbacked, 2);
  ASSERT_EQ(w0.plans.size(), 1u);
  EXPECT_EQ(w0.plans[0].variables(0).shards(1).ps_task(), 2);
  EXPECT_EQ(report->workers_told, 1);
  ASSERT_EQ(report->notes.size(), 1u);
  EXPECT_THAT(report->notes[0], HasSubstr("worker gone"));
  EXPECT_THAT(report->Describe(), HasSubstr("ps:1 lost: 2 backup shards promoted"));
}

TEST(ReplicaFailoverTest, APsThatRefusesPromotionFailsTheFailover) {
  RecordingPs ps0(0, absl::InvalidArgumentError("nope")), ps1(1);
  RecordingWorker w0;
  auto report = FailOver(1, Plan(2, false), {&ps0, &ps1}, {&w0}, Env::Default(), 1000);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(), HasSubstr("promoting the backups of lost ps:1 on ps:0 failed: nope"));
  EXPECT_TRUE(w0.plans.empty());
}

TEST(ReplicaFailoverTest, RejoinCreatesTheBackupsThenAttachesThemOnEachPrimary) {
  RecordingPs ps0(0), ps1(1);
  auto lost = PlanAfterLoss(Plan(2, true), 1);
  ASSERT_TRUE(lost.ok());
  const VariablePlanProto back = PlanWithBackupsOn(*lost, 1);
  CreateShardsRequest create;
  create.set_initialize(false);
  auto n = Rejoin(1, back, create, {&ps0, &ps1});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 4);
  ASSERT_EQ(ps1.created.size(), 1u);
  EXPECT_FALSE(ps1.created[0].initialize());
  ASSERT_EQ(ps0.attached.size(), 1u);
  EXPECT_EQ(ps0.attached[0].backup_ps(), 1);
  EXPECT_EQ(ps0.attached[0].shard_names_size(), 4);
  RecordingPs refusing(0, absl::UnavailableError("gone again"));
  auto failed = Rejoin(1, back, create, {&refusing, &ps1});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(failed.status().message(), HasSubstr("could not attach its backups on ps:1: gone again"));
}

}  // namespace
}  // namespace pstrain
