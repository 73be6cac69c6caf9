// Worker logic over fake ps clients: what it pulls and pushes, loss scaling per mode, local
// replicas, staleness, evaluation shards and errors.
#include "worker/step/worker.h"

#include "common/config/json_util.h"
#include "common/plan/model_variables.h"
#include "common/plan/variable_planner.h"
#include "common/wire/protocol_version.h"
#include "common/wire/ps_trouble.h"
#include "gtest/gtest.h"
#include "tests/test_util/fake_clock_env.h"
#include "tests/worker/fake_ps_client.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/data/dataset.h"
#include "worker/data/shard_iterator.h"

namespace pstrain {
namespace {

std::string JobJson(const std::string& mode) {
  return absl::StrCat(R"({"name": "t", "model": {"input_shape": [3], "loss": "mse", "layers": [
      {"type": "dense", "units": 4, "activation": "relu"}, {"type": "dense", "units": 1}]},
    "optimizer": "sgd", "data": {"dataset": "synthetic_linear", "num_examples": 64},
    "batch_size": 8, "schedule": {"steps": 10}, "partitioner": {"type": "fixed_shards", "num_shards": 2},
    "mode": ")", mode, R"(", "seed": 3})");
}

float Fill(const std::string& name, int64_t row, int64_t col) {
  return 0.1f * static_cast<float>((name.size() + row * 3 + col * 7) % 11) - 0.5f;
}

class WorkerTest : public ::testing::Test {
 protected:
  // A cluster of 2 fake ps holding the plan of JobJson(mode), and one Worker.
  void SetUp(const std::string& mode, int worker_index = 0, int num_workers = 1, int replicas = 1) {
    job_ = *JobSpecFromJson(*ParseJson(JobJson(mode), "test"));
    vars_ = *ModelVariables(job_.model);
    plan_ = VariablePlanToProto(*PlanVariables(vars_, job_.partitioner, 2), job_.seed);
    for (int i = 0; i < 2; ++i) {
      ps_.push_back(std::make_unique<FakePsClient>(i));
      ps_.back()->CreateFromPlan(plan_, Fill);
    }
    WorkerOptions options;
    options.threads = replicas;
    options.replicas = replicas;
    worker_ = std::make_unique<Worker>(
        &env_, options,
        [this](const std::string&, int i) -> absl::StatusOr<std::unique_ptr<PsClient>> {
          return std::unique_ptr<PsClient>(new BorrowedPsClient(ps_[i].get()));
        },
        NewCpuGradientComputer);
    request_.set_protocol_version(kProtocolVersion);
    request_.set_job_spec_json(JobJson(mode));
    *request_.mutable_plan() = plan_;
    request_.add_ps_addresses("a:1");
    request_.add_ps_addresses("b:2");
    request_.set_worker_index(worker_index);
    request_.set_num_workers(num_workers);
  }

  // The full variables a worker would assemble from the fakes' initial values.
  std::vector<Tensor> InitialParams() {
    std::vector<Tensor> params;
    for (const VariableSpec& v : vars_) {
      params.emplace_back(DType::kFloat32, v.shape);
      const int64_t cols = v.shape.size() > 1 ? v.shape[1] : 1;
      for (int64_t i = 0; i < params.back().num_elements(); ++i) {
        params.back().flat()[i] = Fill(v.name, i / cols, i % cols);
      }
    }
    return params;
  }

  // Reassembles the gradients of push number `n` (per ps) into full variables.
  std::vector<Tensor> PushedGradients(size_t n) {
    std::vector<Tensor> grads;
    for (const VariableSpec& v : vars_) grads.emplace_back(DType::kFloat32, v.shape);
    for (auto& ps : ps_) {
      const PushRequest push = ps->pushes().at(n);
      for (const ShardGradient& g : push.gradients()) {
        for (int v = 0; v < plan_.variables_size(); ++v) {
          for (const ShardSpecProto& s : plan_.variables(v).shards()) {
            if (s.shard_name() != g.name()) continue;
            const int64_t row_floats = grads[v].num_elements() / vars_[v].shape[0];
            EXPECT_EQ(g.gradient().data().size(), s.rows() * row_floats * sizeof(float));
            std::memcpy(grads[v].data<float>() + s.row_offset() * row_floats, g.gradient().data().data(),
                        g.gradient().data().size());
          }
        }
      }
    }
    return grads;
  }

  testing_util::FakeClockEnv env_;  // the worker's clock: its waits pass no real time
  JobSpec job_;
  std::vector<VariableSpec> vars_;
  VariablePlanProto plan_;
  std::vector<std::unique_ptr<FakePsClient>> ps_;
  std::unique_ptr<Worker> worker_;
  ConfigureRequest request_;
};

void ExpectNear(const std::vector<Tensor>& a, const std::vector<Tensor>& b, float factor = 1.f) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t v = 0; v < a.size(); ++v) {
    for (int64_t i = 0; i < a[v].num_elements(); ++i) {
      EXPECT_NEAR(a[v].flat()[i], factor * b[v].flat()[i], 1e-5) << "variable " << v << " element " << i;
    }
  }
}

TEST_F(WorkerTest, PushesTheGradientOfItsNextBatch) {
  SetUp("async");
  ConfigureResponse configured;
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  RunStepsRequest run;
  run.set_closure_id(7);
  run.set_num_steps(1);
  RunStepsResponse done;
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok());
  EXPECT_EQ(done.closure_id(), 7);
  EXPECT_EQ(done.steps_done(), 1);
  EXPECT_EQ(done.examples(), 8);
  // The same batch and parameters through a CPU computer directly.
  auto train = std::make_shared<const Dataset>(*LoadDataset(Env::Default(), job_, Split::kTrain));
  ShardIterator it(train, 0, 1, TrainShuffleSeed(job_));
  Batch batch;
  it.Next(8, &batch);
  auto gc = *NewCpuGradientComputer(job_.model, 1);
  std::vector<Tensor> expected;
  BatchMetrics m;
  ASSERT_TRUE(gc->Compute(InitialParams(), batch, 1.f / 8, &expected, &m).ok());
  ExpectNear(PushedGradients(0), expected);
  EXPECT_NEAR(done.loss_sum(), m.loss_sum, 1e-4);
  // One pull and one push per ps per step, each with all of that ps's shards.
  for (auto& ps : ps_) {
    ASSERT_EQ(ps->pulls().size(), 1u);
    ASSERT_EQ(ps->pushes().size(), 1u);
    EXPECT_EQ(ps->pulls()[0].shard_names_size(), ps->pushes()[0].gradients_size());
    EXPECT_GT(ps->pulls()[0].shard_names_size(), 0);
  }
}

// ps_replicas: after the chief promoted ps:1's backups on ps:0, Reassign routes every pull and
// push to ps:0; the acknowledged pushes are counted per shard across the change.
TEST_F(WorkerTest, ReassignRoutesToThePromotedShardsAndCountsAcknowledgedPushes) {
  SetUp("async");
  ConfigureResponse configured;
  ReassignRequest reassign;
  ReassignResponse reassigned;
  EXPECT_EQ(worker_->Reassign(reassign, &reassigned).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  RunStepsRequest run;
  run.set_num_steps(2);
  RunStepsResponse done;
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok());
  VariablePlanProto moved = plan_, promoted = plan_;  // promoted: only ps:1's shards, now on ps:0
  for (int v = 0; v < moved.variables_size(); ++v) {
    for (int i = 0; i < moved.variables(v).shards_size(); ++i) {
      const bool was_ps1 = moved.variables(v).shards(i).ps_task() == 1;
      moved.mutable_variables(v)->mutable_shards(i)->set_ps_task(0);
      promoted.mutable_variables(v)->mutable_shards(i)->set_ps_task(was_ps1 ? 0 : -1);
    }
  }
  ps_[0]->CreateFromPlan(promoted, Fill);
  *reassign.mutable_plan() = moved;
  ASSERT_TRUE(worker_->Reassign(reassign, &reassigned).ok());
  const size_t ps1_pushes = ps_[1]->pushes().size();
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok());
  EXPECT_EQ(ps_[1]->pushes().size(), ps1_pushes);  // nothing goes to ps:1 any more
  const std::map<std::string, int64_t> acked = worker_->AcknowledgedPushes();
  ASSERT_FALSE(acked.empty());
  for (const auto& v : plan_.variables()) {
    for (const auto& s : v.shards()) EXPECT_EQ(acked.at(s.shard_name()), 4) << s.shard_name();
  }
  reassign.mutable_plan()->mutable_variables(0)->mutable_shards(0)->set_ps_task(5);
  EXPECT_EQ(worker_->Reassign(reassign, &reassigned).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(WorkerTest, RunsKStepsAndAppliesUpdatesBetweenThem) {
  SetUp("async");
  ConfigureResponse configured;
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  RunStepsRequest run;
  run.set_num_steps(3);
  RunStepsResponse done;
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok());
  EXPECT_EQ(done.steps_done(), 3);
  EXPECT_EQ(done.examples(), 24);
  EXPECT_EQ(done.max_staleness(), 0);
  EXPECT_GE(done.compute_seconds(), 0.0);
  for (auto& ps : ps_) EXPECT_EQ(ps->pushes().size(), 3u);
  EXPECT_EQ(ps_[0]->shard(plan_.variables(0).shards(0).shard_name()).version, 3);
}

TEST_F(WorkerTest, ReportsAsyncStaleness) {
  SetUp("async");
  ps_[0]->set_extra_updates_per_push(2);  // two other workers' updates land with each of ours
  ConfigureResponse configured;
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  RunStepsRequest run;
  run.set_num_steps(2);
  RunStepsResponse done;
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok());
  EXPECT_EQ(done.max_staleness(), 2);
}

TEST_F(WorkerTest, SyncScalesByGlobalBatchAndTagsPushesWithTheVersion) {
  SetUp("sync", /*worker_index=*/1, /*num_workers=*/2);
  ConfigureResponse configured;
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  RunStepsRequest run;
  run.set_num_steps(2);
  run.set_first_step(0);
  run.set_data_part(1);
  RunStepsResponse done;
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok());
  EXPECT_EQ(done.examples(), 8);  // 4 per step: half the global batch
  for (auto& ps : ps_) {
    ASSERT_EQ(ps->pulls().size(), 2u);
    EXPECT_EQ(ps->pulls()[0].min_version(), 0);
    EXPECT_EQ(ps->pulls()[1].min_version(), 1);
    EXPECT_EQ(ps->pushes()[0].step(), 0);
    EXPECT_EQ(ps->pushes()[1].step(), 1);
    EXPECT_EQ(ps->pushes()[0].worker_index(), 1);
  }
  const std::vector<Tensor> sync_grads = PushedGradients(0);
  // Same worker, same first batch, async: scaled by its own batch (4) instead of the global (8).
  ps_.clear();
  SetUp("async", 1, 2);
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  run.set_num_steps(1);
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok());
  ExpectNear(PushedGradients(0), sync_grads, 2.f);
}

// Any worker can train any data part from any position: worker 0 of 2 asked for part 1 at batch 5
// pushes the gradient of exactly the batch ShardIterator(part 1).Seek(5) yields, tagged part 1.
TEST_F(WorkerTest, RunsTheDataPartAndPositionTheChiefNames) {
  SetUp("sync", /*worker_index=*/0, /*num_workers=*/2);
  ConfigureResponse configured;
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  RunStepsRequest run;
  run.set_num_steps(1);
  run.set_data_part(1);
  run.set_data_position(5);
  RunStepsResponse done;
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok()) << "part 1 on worker 0";
  auto train = std::make_shared<const Dataset>(*LoadDataset(Env::Default(), job_, Split::kTrain));
  ShardIterator it(train, 1, 2, TrainShuffleSeed(job_));
  it.Seek(5, 4);
  Batch batch;
  it.Next(4, &batch);
  auto gc = *NewCpuGradientComputer(job_.model, 1);
  std::vector<Tensor> expected;
  BatchMetrics m;
  ASSERT_TRUE(gc->Compute(InitialParams(), batch, 1.f / 8, &expected, &m).ok());
  ExpectNear(PushedGradients(0), expected);
  for (auto& ps : ps_) EXPECT_EQ(ps->pushes()[0].worker_index(), 1);  // the part, not the worker
  run.set_data_part(2);
  EXPECT_EQ(worker_->RunSteps(run, &done).code(), absl::StatusCode::kInvalidArgument);
}

// A re-run of a sync closure whose steps every ps applied already (the lost worker pushed them
// before it died) pushes nothing: those updates included this part.
TEST_F(WorkerTest, SyncRerunSkipsStepsThePsAppliedAlready) {
  SetUp("sync", 0, 2);
  ConfigureResponse configured;
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  RunStepsRequest run;
  run.set_num_steps(2);
  run.set_first_step(0);
  RunStepsResponse done;
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok());
  for (auto& ps : ps_) ASSERT_EQ(ps->pushes().size(), 2u);  // the fake ps applies each push: version 2
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok());
  for (auto& ps : ps_) EXPECT_EQ(ps->pushes().size(), 2u);
  EXPECT_EQ(done.steps_done(), 2);
  EXPECT_EQ(done.examples(), 0);
}

// A ps past the step while another is not: the re-run waits (on its clock) for the other's push,
// then computes from what it has and pushes to the ps still waiting for this part.
TEST_F(WorkerTest, SyncRerunWaitsOnItsClockForMixedVersionsToAgree) {
  SetUp("sync", 0, 2);
  ConfigureResponse configured;
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  ps_[0]->set_extra_updates_per_push(1);  // after step 0: ps 0 at version 2, ps 1 at version 1
  RunStepsRequest run;
  run.set_num_steps(1);
  RunStepsResponse done;
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok());
  const int64_t before = env_.NowMicros();
  run.set_first_step(1);
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok());
  EXPECT_GE(env_.NowMicros() - before, 1000000);  // 500 tries 2 ms apart: the versions never agree
  EXPECT_GT(done.examples(), 0);                  // then computed from the mixed versions
  EXPECT_EQ(ps_[0]->pushes().size(), 1u);         // past the step: this part's push is in it
  EXPECT_EQ(ps_[1]->pushes().size(), 2u);
}

TEST_F(WorkerTest, LocalReplicasPushTheSameGradients) {
  SetUp("async", 0, 1, /*replicas=*/1);
  ConfigureResponse configured;
  RunStepsRequest run;
  run.set_num_steps(2);
  RunStepsResponse done;
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  ASSERT_TRUE(worker_->RunSteps(run, &done).ok());
  const std::vector<Tensor> one = PushedGradients(1);
  const double one_loss = done.loss_sum();
  ps_.clear();
  SetUp("async", 0, 1, /*replicas=*/3);
  RunStepsResponse three_done;
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  ASSERT_TRUE(worker_->RunSteps(run, &three_done).ok());
  ExpectNear(PushedGradients(1), one);
  EXPECT_NEAR(three_done.loss_sum(), one_loss, 1e-4);
  EXPECT_EQ(three_done.examples(), 16);
}

TEST_F(WorkerTest, EvaluationShardsCoverTheTestSetOnce) {
  SetUp("async");
  ConfigureResponse configured;
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  int64_t examples = 0;
  double loss = 0;
  for (int s = 0; s < 3; ++s) {
    EvaluateRequest eval;
    eval.set_shard_index(s);
    eval.set_num_shards(3);
    EvaluateResponse result;
    ASSERT_TRUE(worker_->Evaluate(eval, &result).ok());
    examples += result.examples();
    loss += result.loss_sum();
  }
  EXPECT_EQ(examples, 16);  // synthetic test split: a quarter of 64
  EvaluateRequest all;
  all.set_num_shards(1);
  EvaluateResponse whole;
  ASSERT_TRUE(worker_->Evaluate(all, &whole).ok());
  EXPECT_NEAR(whole.loss_sum(), loss, 1e-4);
  all.set_shard_index(1);
  EXPECT_EQ(worker_->Evaluate(all, &whole).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(WorkerTest, Errors) {
  SetUp("async");
  RunStepsRequest run;
  run.set_num_steps(1);
  RunStepsResponse done;
  EXPECT_EQ(worker_->RunSteps(run, &done).code(), absl::StatusCode::kFailedPrecondition);
  ConfigureResponse configured;
  ConfigureRequest bad = request_;
  bad.mutable_plan()->mutable_variables(0)->set_name("other/kernel");
  const absl::Status mismatch = worker_->Configure(bad, &configured);
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.message().find("other/kernel"), std::string::npos) << mismatch;
  bad = request_;
  bad.set_worker_index(1);
  EXPECT_EQ(worker_->Configure(bad, &configured).code(), absl::StatusCode::kInvalidArgument);
  bad = request_;
  bad.set_job_spec_json("{not json");
  EXPECT_EQ(worker_->Configure(bad, &configured).code(), absl::StatusCode::kInvalidArgument);
  bad = request_;
  bad.set_protocol_version(99);
  EXPECT_EQ(worker_->Configure(bad, &configured).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(worker_->Configure(request_, &configured).ok());
  ps_[1]->set_fail(absl::UnavailableError("ps:1 at b:2 is gone"));
  const absl::Status gone = worker_->RunSteps(run, &done);
  // The signal the chief reads: ABORTED "ps:1 ..." naming the cause; the worker stays configured.
  EXPECT_EQ(gone.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(gone.message().rfind("ps:1 UNAVAILABLE", 0), 0u) << gone;
  EXPECT_NE(gone.message().find("is gone"), std::string::npos) << gone;
  EXPECT_EQ(PsTroubleIndex(gone), 1);
  ps_[1]->set_fail(absl::NotFoundError("shard dense/kernel/part_1 is not held by ps:1 (it holds 0 shards)"));
  EXPECT_EQ(PsTroubleIndex(worker_->RunSteps(run, &done)), 1);
  ps_[1]->set_fail(absl::InvalidArgumentError("a bad request"));
  EXPECT_EQ(worker_->RunSteps(run, &done).code(), absl::StatusCode::kInvalidArgument);
  ps_[1]->set_fail(absl::OkStatus());
  EXPECT_TRUE(worker_->RunSteps(run, &done).ok());
}

}  // namespace
}  // namespace pstrain
