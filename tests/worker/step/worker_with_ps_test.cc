// Workers over real PsServer objects in one process (LocalPsClient): the pull/push protocol of
// both modes as the ps implements it — sync steps tagged with the version pulled, async pushes
// applied at once — with 2 ps tasks and 2 workers running concurrently; a lost worker's data part
// re-run on another worker (alone, or racing a late execution of the same part) stays exact;
// pushes kept in flight during the next step (overlap_push) are all applied and acknowledged, and
// one that fails ends the closure with every applied push acknowledged.
#include <atomic>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "common/config/job_spec.h"
#include "common/config/json_util.h"
#include "common/plan/model_variables.h"
#include "common/plan/variable_planner.h"
#include "common/platform/env.h"
#include "common/platform/status_macros.h"
#include "common/wire/protocol_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "ps/store/optimizer.h"
#include "ps/store/ps_server.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/data/ctr_synthetic.h"
#include "worker/step/worker.h"

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

// A ps client whose pushes may be failed by a test (`fault`, set before the workers run).
class FaultyPsClient : public LocalPsClient {
 public:
  FaultyPsClient(PsServer* server, std::function<absl::Status()>* fault) : LocalPsClient(server), fault_(fault) {}
  absl::Status Push(const PushRequest& request, PushResponse* response) override {
    if (*fault_) RETURN_IF_ERROR((*fault_)());
    return LocalPsClient::Push(request, response);
  }

 private:
  std::function<absl::Status()>* fault_;
};

struct Cluster {
  explicit Cluster(const std::string& mode, int num_workers) : Cluster(JobJson(mode), mode, num_workers) {}
  // `json`: the job spec (its mode must be `mode`); `overlap_push`: WorkerOptions::overlap_push.
  Cluster(const std::string& json, const std::string& mode, int num_workers, int overlap_push = -1) {
    job = *JobSpecFromJson(*ParseJson(json, "test"));
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
      options.overlap_push = overlap_push;
      // Real time: a sync re-run that finds the ps at mixed versions waits up to a second for the
      // other execution's pushes, which other threads make (the race tests below need them seen).
      workers.push_back(std::make_unique<Worker>(
          Env::Default(), options,
          [this](const std::string&, int i) -> absl::StatusOr<std::unique_ptr<PsClient>> {
            return std::unique_ptr<PsClient>(new FaultyPsClient(ps[i].get(), &push_fault[i]));
          },
          NewCpuGradientComputer));
      ConfigureRequest configure;
      configure.set_protocol_version(kProtocolVersion);
      configure.set_job_spec_json(json);
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

  int64_t Version(int p, const std::string& shard) { return Stats(p, shard).version(); }

  ShardStats Stats(int p, const std::string& shard) {
    PsStatsRequest q;
    PsStatsResponse r;
    EXPECT_TRUE(ps[p]->GetStats(q, &r).ok());
    for (const auto& s : r.shards()) {
      if (s.name() == shard) return s;
    }
    ADD_FAILURE() << "no shard " << shard << " on ps:" << p;
    return ShardStats();
  }

  // Every shard of the plan, with its ps.
  std::vector<std::pair<int, std::string>> Shards() const {
    std::vector<std::pair<int, std::string>> out;
    for (const auto& v : plan.variables()) {
      for (const auto& s : v.shards()) out.emplace_back(s.ps_task(), s.shard_name());
    }
    return out;
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
  std::function<absl::Status()> push_fault[2];  // per ps
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

// Runs `steps` sync steps of data part `part` from global step `first` on worker `w`.
absl::Status RunPart(Cluster& c, int w, int part, int steps, int64_t first, RunStepsResponse* out) {
  RunStepsRequest run;
  run.set_num_steps(steps);
  run.set_first_step(first);
  run.set_data_part(part);
  run.set_data_position(first);
  return c.workers[w]->RunSteps(run, out);
}

// Worker 1 is lost: worker 0 runs its data part beside its own, at the same time (the ps parks
// each part's push until the other arrives). The result is exactly the normal run's; when worker 1
// comes back late with the same closure, every step was applied already and nothing changes.
TEST(WorkerWithPsTest, SyncLostWorkersPartRerunOnAnotherIsExact) {
  Cluster normal("sync", 2);
  normal.RunAll(6, 0);
  Cluster rescued("sync", 2);
  RunStepsResponse own, other;
  absl::Status own_status, other_status;
  std::thread t0([&] { own_status = RunPart(rescued, 0, 0, 6, 0, &own); });
  std::thread t1([&] { other_status = RunPart(rescued, 0, 1, 6, 0, &other); });
  t0.join();
  t1.join();
  ASSERT_TRUE(own_status.ok()) << own_status;
  ASSERT_TRUE(other_status.ok()) << other_status;
  EXPECT_EQ(other.examples(), 6 * 8);
  const auto& shard = rescued.plan.variables(0).shards(0);
  EXPECT_EQ(rescued.Version(shard.ps_task(), shard.shard_name()), 6);
  const double loss = rescued.TestLoss();
  EXPECT_EQ(loss, normal.TestLoss());  // bit for bit: the same parts summed in the same order
  RunStepsResponse late;
  ASSERT_TRUE(RunPart(rescued, 1, 1, 6, 0, &late).ok());
  EXPECT_EQ(late.examples(), 0);  // every step skipped: applied already with part 1 in it
  EXPECT_EQ(rescued.Version(shard.ps_task(), shard.shard_name()), 6);
  EXPECT_EQ(rescued.TestLoss(), loss);
}

// A silent worker that resumes while its part is re-run elsewhere: two executions of part 1 race
// (each push collected once per step; the other answered "already counted"), still exact.
TEST(WorkerWithPsTest, SyncPartRunTwiceAtOnceCountsOnce) {
  Cluster normal("sync", 2);
  normal.RunAll(6, 0);
  Cluster raced("sync", 2);
  std::vector<absl::Status> status(3);
  std::vector<RunStepsResponse> out(3);
  std::thread a([&] { status[0] = RunPart(raced, 0, 0, 6, 0, &out[0]); });
  std::thread b([&] { status[1] = RunPart(raced, 0, 1, 6, 0, &out[1]); });
  std::thread c([&] { status[2] = RunPart(raced, 1, 1, 6, 0, &out[2]); });
  a.join();
  b.join();
  c.join();
  for (const absl::Status& st : status) ASSERT_TRUE(st.ok()) << st;
  const auto& shard = raced.plan.variables(0).shards(0);
  EXPECT_EQ(raced.Version(shard.ps_task(), shard.shard_name()), 6);
  EXPECT_EQ(raced.TestLoss(), normal.TestLoss());
}

// A CTR job in `mode` over a small synthetic Criteo set written to TempDir()/`name`.
std::string CtrJob(const std::string& name, const std::string& mode) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/", name);
  CtrSyntheticOptions data;
  data.train_examples = 400;
  data.test_examples = 100;
  data.vocabulary = 300;
  EXPECT_TRUE(WriteCtrSyntheticSet(Env::Default(), data, dir).ok());
  return absl::StrCat(R"({"name": "ctr", "model": {"numeric_inputs": 13,
      "fields": [{"vocabulary_size": 1000, "embedding_dim": 4, "count": 26}],
      "layers": [{"type": "dense", "units": 8, "activation": "relu"}, {"type": "dense", "units": 1}]},
      "optimizer": {"type": "adagrad", "learning_rate": 0.05},
      "data": {"dataset": "criteo", "train_files": [")", dir, R"(/train.txt"], "test_files": [")", dir,
                                        R"(/test.txt"]}, "batch_size": 32, "schedule": {"steps": 10},
      "mode": ")", mode, R"(", "seed": 5})");
}

// CTR jobs read each part's own files: worker 0 re-running worker 1's part loads part 1's files
// when first asked for it, and the run is exactly the normal one.
TEST(WorkerWithPsTest, CtrPartOfALostWorkerIsLoadedOnDemandAndExact) {
  const std::string json = CtrJob("worker_with_ps_ctr", "sync");
  Cluster normal(json, "sync", 2);
  normal.RunAll(4, 0);
  Cluster rescued(json, "sync", 2);
  RunStepsResponse own, other;
  absl::Status own_status, other_status;
  std::thread t0([&] { own_status = RunPart(rescued, 0, 0, 4, 0, &own); });
  std::thread t1([&] { other_status = RunPart(rescued, 0, 1, 4, 0, &other); });
  t0.join();
  t1.join();
  ASSERT_TRUE(own_status.ok()) << own_status;
  ASSERT_TRUE(other_status.ok()) << other_status;
  EXPECT_EQ(other.examples(), 4 * 16);
  EXPECT_EQ(rescued.TestLoss(), normal.TestLoss());
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

TEST(WorkerWithPsTest, OverlappedPushesAreAllAppliedAndAcknowledged) {
  Cluster c(JobJson("async"), "async", 2, /*overlap_push=*/1);
  const double before = c.TestLoss();
  auto first = c.RunAll(6, 0);
  auto second = c.RunAll(6, 6);  // a closure ends with its last push answered: none is left over
  for (const auto& [p, shard] : c.Shards()) EXPECT_EQ(c.Version(p, shard), 24) << shard;
  for (const auto& w : c.workers) {
    const std::map<std::string, int64_t> acked = w->AcknowledgedPushes();
    for (const auto& [p, shard] : c.Shards()) {
      auto it = acked.find(shard);
      ASSERT_NE(it, acked.end()) << shard;
      EXPECT_EQ(it->second, 12) << shard;
    }
  }
  EXPECT_EQ(second[0].examples(), 6 * 8);
  EXPECT_LT(c.TestLoss(), before);
}

// A CTR model's rows travel with the push they belong to: the same rows reach every table shard
// as without overlap (each step's unique ids, swapped with its gradient).
TEST(WorkerWithPsTest, OverlappedCtrPushesCarryTheirOwnStepsRows) {
  const std::string json = CtrJob("worker_with_ps_ctr_overlap", "async");
  Cluster plain(json, "async", 1, /*overlap_push=*/0);
  Cluster overlapped(json, "async", 1, /*overlap_push=*/1);
  plain.RunAll(7, 0);
  overlapped.RunAll(7, 0);
  int tables = 0;
  for (const auto& [p, shard] : plain.Shards()) {
    const ShardStats a = plain.Stats(p, shard), b = overlapped.Stats(p, shard);
    EXPECT_EQ(b.version(), 7) << shard;
    EXPECT_EQ(b.rows_pushed(), a.rows_pushed()) << shard;
    if (a.rows_pushed() > 0) ++tables;
  }
  EXPECT_GT(tables, 0);
}

// The third push fails on ps:1 while the fourth step computes: the closure ends with that error,
// the fourth step is not pushed, and every shard's version is exactly the pushes acknowledged.
TEST(WorkerWithPsTest, AnOverlappedPushThatFailsEndsTheClosure) {
  Cluster c(JobJson("async"), "async", 1, /*overlap_push=*/1);
  std::atomic<int> pushes{0};
  c.push_fault[1] = [&pushes] {
    return pushes.fetch_add(1) == 2 ? absl::UnavailableError("connection reset") : absl::OkStatus();
  };
  RunStepsRequest run;
  run.set_num_steps(6);
  RunStepsResponse out;
  absl::Status s = c.workers[0]->RunSteps(run, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("ps:1"));
  const std::map<std::string, int64_t> acked = c.workers[0]->AcknowledgedPushes();
  for (const auto& [p, shard] : c.Shards()) {
    auto it = acked.find(shard);
    const int64_t acknowledged = it == acked.end() ? 0 : it->second;
    EXPECT_EQ(acknowledged, p == 1 ? 2 : 3) << shard;
    EXPECT_EQ(c.Version(p, shard), acknowledged) << shard;
  }
}

}  // namespace
}  // namespace pstrain
