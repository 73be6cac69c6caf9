// Workers over real PsServer objects in one process (LocalPsClient): the pull/push protocol of
// both modes as the ps implements it — sync steps tagged with the version pulled, async pushes
// applied at once — with 2 ps tasks and 2 workers running concurrently.
#include <thread>

#include "common/job_spec.h"
#include "common/json_util.h"
#include "common/model_variables.h"
#include "common/protocol_version.h"
#include "common/variable_planner.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "ps/store/optimizer.h"
#include "ps/store/ps_server.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/worker.h"

namespace pstrain {
namespace {

std::string JobJson(const std::string& mode) {
  return absl::StrCat(R"({"name": "t", "model": {"input_shape": [3], "loss": "mse", "layers": [
      {"type": "dense", "units": 8, "activation": "relu"}, {"type": "dense", "units": 1}]},
    "optimizer": {"type": "adam", "learning_rate": 0.01},
    "data": {"dataset": "synthetic_linear", "num_examples": 256},
    "batch_size": 16, "schedule": {"steps": 10}, "partitioner": {"type": "fixed_shards", "num_shards": 2},
    "mode": ")", mode, R"(", "seed": 4})");
}

struct Cluster {
  explicit Cluster(const std::string& mode, int num_workers) {
    job = *JobSpecFromJson(*ParseJson(JobJson(mode), "test"));
    plan = VariablePlanToProto(*PlanVariables(*ModelVariables(job.model), job.partitioner, 2), job.seed);
    for (int p = 0; p < 2; ++p) {
      PsServer::Options options;
      options.task = absl::StrCat("ps:", p);
      ps.push_back(std::make_unique<PsServer>(options));
      CreateShardsRequest create;
      create.set_protocol_version(kProtocolVersion);
      for (const auto& v : plan.variables()) {
        for (const auto& s : v.shards()) {
          if (s.ps_task() == p) *create.add_shards() = s;
        }
      }
      *create.mutable_optimizer() = OptimizerProtoFromSpec(job.optimizer);
      create.set_mode(mode == "sync" ? UPDATE_SYNC : UPDATE_ASYNC);
      create.set_num_workers(num_workers);
      create.set_sync_timeout_ms(20000);
      create.set_initialize(true);
      CreateShardsResponse created;
      EXPECT_TRUE(ps.back()->CreateShards(create, &created).ok());
    }
    for (int w = 0; w < num_workers; ++w) {
      WorkerOptions options;
      options.task = absl::StrCat("worker:", w);
      workers.push_back(std::make_unique<Worker>(
          options,
          [this](const std::string&, int i) -> absl::StatusOr<std::unique_ptr<PsClient>> {
            return std::unique_ptr<PsClient>(new LocalPsClient(ps[i].get()));
          },
          NewCpuGradientComputer));
      ConfigureRequest configure;
      configure.set_protocol_version(kProtocolVersion);
      configure.set_job_spec_json(JobJson(mode));
      *configure.mutable_plan() = plan;
      configure.add_ps_addresses("local:0");
      configure.add_ps_addresses("local:1");
      configure.set_worker_index(w);
      configure.set_num_workers(num_workers);
      ConfigureResponse configured;
      EXPECT_TRUE(workers.back()->Configure(configure, &configured).ok());
    }
  }

  // Runs `steps` steps on every worker at once; returns their responses.
  std::vector<RunStepsResponse> RunAll(int steps, int64_t first_step) {
    std::vector<RunStepsResponse> out(workers.size());
    std::vector<absl::Status> status(workers.size());
    std::vector<std::thread> threads;
    for (size_t w = 0; w < workers.size(); ++w) {
      threads.emplace_back([&, w] {
        RunStepsRequest run;
        run.set_num_steps(steps);
        run.set_first_step(first_step);
        run.set_data_part(static_cast<int>(w));  // as the chief names them: worker w's own part
        run.set_data_position(first_step);
        status[w] = workers[w]->RunSteps(run, &out[w]);
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& s : status) EXPECT_TRUE(s.ok()) << s;
    return out;
  }

  int64_t Version(int p, const std::string& shard) {
    PsStatsRequest q;
    PsStatsResponse r;
    EXPECT_TRUE(ps[p]->GetStats(q, &r).ok());
    for (const auto& s : r.shards()) {
      if (s.name() == shard) return s.version();
    }
    return -1;
  }

  double TestLoss() {
    EvaluateRequest eval;
    eval.set_num_shards(1);
    EvaluateResponse r;
    EXPECT_TRUE(workers[0]->Evaluate(eval, &r).ok());
    return r.loss_sum() / r.examples();
  }

  JobSpec job;
  VariablePlanProto plan;
  std::vector<std::unique_ptr<PsServer>> ps;
  std::vector<std::unique_ptr<Worker>> workers;
};

TEST(WorkerWithPsTest, SyncWorkersAdvanceTogether) {
  Cluster c("sync", 2);
  const double before = c.TestLoss();
  auto first = c.RunAll(5, 0);
  auto second = c.RunAll(5, 5);
  for (const auto& r : second) EXPECT_EQ(r.steps_done(), 5);
  const auto& shard = c.plan.variables(0).shards(0);
  EXPECT_EQ(c.Version(shard.ps_task(), shard.shard_name()), 10);  // one update per global step
  EXPECT_LT(c.TestLoss(), before);
}

TEST(WorkerWithPsTest, AsyncPushesApplyAtOnce) {
  Cluster c("async", 2);
  const double before = c.TestLoss();
  auto done = c.RunAll(6, 0);
  const auto& shard = c.plan.variables(1).shards(0);
  EXPECT_EQ(c.Version(shard.ps_task(), shard.shard_name()), 12);  // every push is an update
  EXPECT_EQ(done[0].examples(), 6 * 8);
  EXPECT_GE(done[0].max_staleness(), 0);
  EXPECT_LT(c.TestLoss(), before);
}

}  // namespace
}  // namespace pstrain
