// The real binaries as a user runs them: pstrain-ps and pstrain-worker processes on free
// 127.0.0.1 ports driven over gRPC (configure, steps, evaluation, SIGTERM), and `pstrain train`.
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "common/config/job_spec.h"
#include "common/config/json_util.h"
#include "common/plan/model_variables.h"
#include "common/plan/variable_planner.h"
#include "common/wire/protocol_version.h"
#include "common/platform/exit_codes.h"
#include "gtest/gtest.h"
#include "ps/client/grpc_ps_client.h"
#include "ps/store/optimizer.h"
#include "tests/test_util/loopback.h"
#include "worker/client/grpc_worker_client.h"

extern char** environ;

namespace pstrain {
namespace {

std::string Bin(const std::string& name) { return std::string(PSTRAIN_BIN_DIR) + "/" + name; }

pid_t Spawn(const std::string& binary, const std::string& tf_config, std::vector<std::string> args) {
  std::vector<std::string> env = {"TF_CONFIG=" + tf_config};
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("TF_CONFIG=", 0) != 0) env.push_back(*e);
  }
  std::vector<char*> envp, argv;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  args.insert(args.begin(), binary);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, binary.c_str(), nullptr, nullptr, argv.data(), envp.data()), 0);
  return pid;
}

int WaitExit(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 50; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

// Output (stdout + stderr) and exit code of a shell command.
std::pair<int, std::string> RunCommand(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// A real pstrain-ps and pstrain-worker on free ports, the linear job's variables created on the ps
// (in `mode`, for `num_workers` workers) and the worker configured as worker 0, as the chief would.
struct RealCluster {
  explicit RealCluster(const std::string& mode, int num_workers) {
    const int ps_port = testing_util::FreeLoopbackPort(), worker_port = testing_util::FreeLoopbackPort();
    ps_address = absl::StrCat("127.0.0.1:", ps_port);
    worker_address = absl::StrCat("127.0.0.1:", worker_port);
    const std::string cluster =
        absl::StrCat(R"({"cluster":{"ps":[")", ps_address, R"("],"worker":[")", worker_address, R"("]},)");
    ps = Spawn(Bin("pstrain-ps"), cluster + R"("task":{"type":"ps","index":0}})", {"--listen=" + ps_address});
    worker = Spawn(Bin("pstrain-worker"), cluster + R"("task":{"type":"worker","index":0}})",
                   {"--listen=" + worker_address, "--threads=1"});
    for (int i = 0; i < 400 && !(testing_util::LoopbackAccepts(ps_port) && testing_util::LoopbackAccepts(worker_port)); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    JobSpec job = *LoadJobSpec("linear");
    job.mode = mode;
    const VariablePlanProto plan =
        VariablePlanToProto(*PlanVariables(*ModelVariables(job.model), job.partitioner, 1), job.seed);
    GrpcPsClient ps_client(ps_address, "ps:0", absl::Seconds(10), TransportConfig());
    CreateShardsRequest create;
    create.set_protocol_version(kProtocolVersion);
    for (const auto& v : plan.variables()) *create.add_shards() = v.shards(0);
    *create.mutable_optimizer() = OptimizerProtoFromSpec(job.optimizer);
    create.set_mode(mode == "sync" ? UPDATE_SYNC : UPDATE_ASYNC);
    create.set_num_workers(num_workers);
    create.set_initialize(true);
    CreateShardsResponse created;
    EXPECT_TRUE(ps_client.CreateShards(create, &created).ok());
    client = NewGrpcWorkerClient(worker_address, "worker:0", TlsConfig());
    ConfigureRequest configure;
    configure.set_protocol_version(kProtocolVersion);
    configure.set_job_spec_json(DumpJson(JobSpecToJson(job)));
    *configure.mutable_plan() = plan;
    configure.add_ps_addresses(ps_address);
    configure.set_num_workers(num_workers);
    ConfigureResponse configured;
    const absl::Status s = client->Configure(configure, &configured, 20000);
    EXPECT_TRUE(s.ok()) << s;
  }

  std::string ps_address, worker_address;
  pid_t ps = 0, worker = 0;
  std::unique_ptr<WorkerClient> client;
};

TEST(WorkerBinaryTest, TrainsWithARealPsAndStopsOnSigterm) {
  RealCluster c("async", 1);
  EvaluateRequest eval;
  eval.set_num_shards(1);
  EvaluateResponse before, after;
  ASSERT_TRUE(c.client->Evaluate(eval, &before, 20000).ok());
  RunStepsRequest run;
  run.set_num_steps(50);
  RunStepsResponse done;
  ASSERT_TRUE(c.client->RunSteps(run, &done, 20000).ok());
  EXPECT_EQ(done.examples(), 50 * 64);
  ASSERT_TRUE(c.client->Evaluate(eval, &after, 20000).ok());
  EXPECT_EQ(after.examples(), 1024);
  EXPECT_LT(after.loss_sum(), before.loss_sum());
  ::kill(c.worker, SIGTERM);
  ::kill(c.ps, SIGTERM);
  EXPECT_EQ(WaitExit(c.worker, 20), kExitStoppedBySignal);
  EXPECT_EQ(WaitExit(c.ps, 20), kExitStoppedBySignal);
}

TEST(WorkerBinaryTest, SigtermWhileWaitingForOtherSyncWorkersStillExits) {
  RealCluster c("sync", 2);  // the second worker never comes: the first step waits on the ps
  std::thread stuck([&c] {
    RunStepsRequest run;
    run.set_num_steps(3);
    RunStepsResponse done;
    EXPECT_FALSE(c.client->RunSteps(run, &done, 30000).ok());
  });
  // SIGTERM once the worker waits on the ps: its first push is there, parked until the other
  // worker's comes.
  GrpcPsClient ps(c.ps_address, "ps:0", absl::Seconds(10), TransportConfig());
  auto pushes = [&ps] {
    PsStatsResponse stats;
    return ps.GetStats(PsStatsRequest(), &stats).ok() ? stats.total().pushes() : 0;
  };
  for (int i = 0; i < 3000 && pushes() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GT(pushes(), 0);
  ::kill(c.worker, SIGTERM);
  EXPECT_EQ(WaitExit(c.worker, 15), kExitStoppedBySignal);
  stuck.join();
  ::kill(c.ps, SIGTERM);
  EXPECT_EQ(WaitExit(c.ps, 20), kExitStoppedBySignal);
}

// A second worker told to listen where another serves must fail, not share the port: with
// SO_REUSEPORT the kernel would split the chief's calls between the two.
TEST(WorkerBinaryTest, SecondWorkerOnATakenPortFails) {
  const int port = testing_util::FreeLoopbackPort();
  const std::string address = absl::StrCat("127.0.0.1:", port);
  const std::string tf_config = absl::StrCat(R"({"cluster":{"ps":["127.0.0.1:1"],"worker":[")", address,
                                             R"("]},"task":{"type":"worker","index":0}})");
  const pid_t first = Spawn(Bin("pstrain-worker"), tf_config, {"--listen=" + address, "--threads=1"});
  for (int i = 0; i < 400 && !testing_util::LoopbackAccepts(port); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(testing_util::LoopbackAccepts(port));
  auto [code, out] = RunCommand("TF_CONFIG='" + tf_config + "' timeout 20 " + Bin("pstrain-worker") +
                                " --threads=1 --listen=" + address);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("cannot listen on " + address), std::string::npos) << out;
  ::kill(first, SIGTERM);
  EXPECT_EQ(WaitExit(first, 20), kExitStoppedBySignal);
}

TEST(WorkerBinaryTest, BadConfigurationExitsTwo) {
  auto [code, out] = RunCommand("env -u TF_CONFIG " + Bin("pstrain-worker"));
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("TF_CONFIG"), std::string::npos) << out;
  std::tie(code, out) = RunCommand(
      R"(TF_CONFIG='{"cluster":{"ps":["127.0.0.1:1"],"worker":["127.0.0.1:2"]},"task":{"type":"worker","index":0}}' )" +
      Bin("pstrain-worker") + " --device=tpu");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--device=tpu"), std::string::npos) << out;
}

TEST(TrainCommandTest, TrainsTheLinearJobAndPrintsASummary) {
  auto [code, out] = RunCommand(Bin("pstrain") + " train --job=linear --threads=1 2>/dev/null");
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("epoch 7/7"), std::string::npos) << out;
  auto summary = ParseJson(out.substr(out.rfind("\n{") + 1), "summary");
  ASSERT_TRUE(summary.ok()) << out;
  EXPECT_EQ((*summary)["steps"], 400);
  EXPECT_LT((*summary)["final_test_loss"].get<double>(), 0.05);
}

TEST(TrainCommandTest, ErrorsExitTwoAndNameTheProblem) {
  auto [code, out] = RunCommand(Bin("pstrain") + " train --job=cnn --data_dir=/nonexistent/fm");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("/nonexistent/fm/train-images-idx3-ubyte.gz"), std::string::npos) << out;
  std::tie(code, out) = RunCommand(Bin("pstrain") + " train --job=linear --threads=0");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--threads"), std::string::npos) << out;
  std::tie(code, out) = RunCommand(Bin("pstrain") + " train --bogus=1");
  EXPECT_EQ(code, 2) << out;
}

}  // namespace
}  // namespace pstrain
