// The chief's Coordinator driving real ps servers and real Worker objects in one process (no
// network): training makes the test loss fall, `pstrain evaluate`'s code agrees with the chief's
// final evaluation, and sync mode with 2 workers equals 1 worker on the global batch.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "chief/checkpoint/checkpoint_manager.h"
#include "chief/coordinator/coordinator.h"
#include "chief/evaluation/checkpoint_evaluator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "ps/store/ps_server.h"
#include "worker/client/local_worker_client.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/step/worker.h"

namespace pstrain {
namespace {

class InProcessCluster {
 public:
  InProcessCluster(int num_ps, int num_workers) {
    for (int i = 0; i < num_ps; ++i) {
      PsServer::Options o;
      o.task = absl::StrCat("ps:", i);
      servers_.push_back(std::make_unique<PsServer>(o));
      ps_.push_back(std::make_unique<LocalPsClient>(servers_.back().get()));
      addresses_.push_back(absl::StrCat("ps", i));
    }
    for (int i = 0; i < num_workers; ++i) {
      WorkerOptions o;
      o.task = absl::StrCat("worker:", i);
      auto factory = [this](const std::string&, int index) -> absl::StatusOr<std::unique_ptr<PsClient>> {
        return std::unique_ptr<PsClient>(std::make_unique<LocalPsClient>(servers_[index].get()));
      };
      workers_.push_back(std::make_unique<Worker>(Env::Default(), o, factory, NewCpuGradientComputer));
      clients_.push_back(std::make_unique<LocalWorkerClient>(workers_.back().get(), o.task));
    }
  }

  absl::StatusOr<JobSummary> Run(const JobSpec& spec, const std::string& model_dir) {
    std::vector<PsClient*> ps;
    for (auto& p : ps_) ps.push_back(p.get());
    std::vector<WorkerClient*> workers;
    for (auto& w : clients_) workers.push_back(w.get());
    CoordinatorOptions options;
    options.model_dir = model_dir;
    options.wait.timeout_ms = 5000;
    Coordinator coordinator(Env::Default(), spec, ps, workers, addresses_, options);
    return coordinator.Run();
  }

 private:
  std::vector<std::unique_ptr<PsServer>> servers_;
  std::vector<std::unique_ptr<PsClient>> ps_;
  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<WorkerClient>> clients_;
};

std::string FreshDir(const std::string& name) {
  std::string dir = absl::StrCat(::testing::TempDir(), "/in_process_cluster_", name, "_", ::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

JobSpec LinearJob() {
  auto spec = LoadJobSpec("linear");
  EXPECT_TRUE(spec.ok());
  return *spec;
}

TEST(InProcessClusterTest, TrainingLowersTheTestLossAndEvaluateAgrees) {
  JobSpec spec = LinearJob();
  spec.schedule.steps = 200;
  spec.schedule.eval_every_steps = 20;
  const std::string dir = FreshDir("train");
  InProcessCluster cluster(2, 2);
  // The first inline evaluation comes after 20 steps; the final one after 200.
  auto summary = cluster.Run(spec, dir);
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_TRUE(summary->final_eval.has_value());
  EXPECT_EQ(summary->global_step, 200);
  std::ifstream metrics(dir + "/metrics.jsonl");
  std::string line;
  double first_eval = -1;
  while (std::getline(metrics, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == "eval" && first_eval < 0) first_eval = j["test_loss"].get<double>();
  }
  ASSERT_GT(first_eval, 0);
  EXPECT_LT(summary->final_eval->loss, 0.5 * first_eval);

  CheckpointEvalOptions options;
  auto single = EvaluateCheckpoint(Env::Default(), dir + "/ckpt-200", options);
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_EQ(single->examples, summary->final_eval->examples);
  EXPECT_NEAR(single->loss, summary->final_eval->loss, 1e-6 * std::max(1.0, summary->final_eval->loss));
}

// Full-batch steps (the data set is one global batch) make the data order irrelevant, so the only
// difference between the runs is how gradients are combined.
TEST(InProcessClusterTest, SyncTwoWorkersEqualOneWorkerWithTheGlobalBatch) {
  JobSpec spec = LinearJob();
  spec.data.num_examples = 64;
  spec.batch_size = 64;
  spec.schedule.steps = 6;
  spec.schedule.steps_per_closure = 2;
  spec.mode = "sync";
  const std::string two = FreshDir("sync2"), one = FreshDir("sync1");
  {
    InProcessCluster cluster(2, 2);
    auto summary = cluster.Run(spec, two);
    ASSERT_TRUE(summary.ok()) << summary.status();
  }
  {
    InProcessCluster cluster(1, 1);
    auto summary = cluster.Run(spec, one);
    ASSERT_TRUE(summary.ok()) << summary.status();
  }
  auto a = ReadCheckpointIndex(Env::Default(), two + "/ckpt-6");
  auto b = ReadCheckpointIndex(Env::Default(), one + "/ckpt-6");
  ASSERT_TRUE(a.ok() && b.ok());
  auto pa = LoadModelVariables(Env::Default(), two + "/ckpt-6", *a, spec.model);
  auto pb = LoadModelVariables(Env::Default(), one + "/ckpt-6", *b, spec.model);
  ASSERT_TRUE(pa.ok() && pb.ok());
  ASSERT_EQ(pa->size(), pb->size());
  bool moved = false;
  for (size_t v = 0; v < pa->size(); ++v) {
    for (int64_t i = 0; i < (*pa)[v].num_elements(); ++i) {
      EXPECT_NEAR((*pa)[v].flat()[i], (*pb)[v].flat()[i], 1e-5) << "variable " << v << " element " << i;
      moved |= (*pa)[v].flat()[i] != 0.0f;
    }
  }
  EXPECT_TRUE(moved);
}

// TerminateOnNaN in the cluster (class: training garbage in silence): a learning rate that blows up
// after step 40 stops the job naming the step and the variable, and the checkpoints saved before
// stay the newest, complete and finite.
TEST(DivergenceTest, StopsTheClusterAndKeepsTheLastGoodCheckpoint) {
  JobSpec spec = LinearJob();
  spec.optimizer.type = "sgd";
  spec.optimizer.learning_rate.schedule = "piecewise_constant";
  spec.optimizer.learning_rate.boundaries = {40};
  spec.optimizer.learning_rate.values = {0.01, 1e30};
  spec.divergence_loss_factor = 0;  // TerminateOnNaN alone: the loss-growth rule would stop it first
  spec.schedule.steps = 400;
  spec.schedule.steps_per_closure = 5;
  spec.schedule.checkpoint_every_steps = 20;
  const std::string dir = FreshDir("diverge");
  InProcessCluster cluster(1, 1);
  absl::StatusOr<JobSummary> summary = cluster.Run(spec, dir);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(summary.status().message());
  EXPECT_THAT(message, ::testing::HasSubstr("at global step "));
  EXPECT_THAT(message, ::testing::HasSubstr("training diverged at worker:0's step"));
  EXPECT_THAT(message, ::testing::ContainsRegex("variable dense/(kernel|bias)|gradient of variable dense/"));
  CheckpointManager checkpoints(Env::Default(), dir, 5, {});
  auto found = checkpoints.FindLatest(nullptr, /*remove_incomplete=*/false);
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status();
  EXPECT_LE((*found)->index.global_step, 60);
  auto params = LoadModelVariables(Env::Default(), (*found)->dir, (*found)->index, spec.model);
  ASSERT_TRUE(params.ok()) << params.status();
  for (const Tensor& t : *params) {
    for (float v : t.flat()) EXPECT_TRUE(std::isfinite(v));
  }
}

TEST(DivergenceTest, TurnedOffTheJobGoesOn) {
  JobSpec spec = LinearJob();
  spec.optimizer.type = "sgd";
  spec.optimizer.learning_rate.initial = 1e30;
  spec.schedule.steps = 40;
  spec.terminate_on_nan = false;
  spec.divergence_loss_factor = 0;
  InProcessCluster cluster(1, 1);
  absl::StatusOr<JobSummary> summary = cluster.Run(spec, FreshDir("diverge_off"));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->global_step, 40);
}

}  // namespace
}  // namespace pstrain
