// The worker's gRPC edge over real gRPC on 127.0.0.1: a WorkerServiceImpl in an in-process server
// (fake ps behind it) driven through NewGrpcWorkerClient.
#include "worker/server/worker_service.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

#include "absl/synchronization/mutex.h"
#include "common/platform/env.h"
#include "common/wire/protocol_version.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/test_util/test_certs.h"
#include "tests/worker/fake_ps_client.h"
#include "worker/client/grpc_worker_client.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/server/worker_grpc_server.h"

namespace pstrain {
namespace {

const char kJob[] = R"({"name": "t", "model": {"input_shape": [2], "loss": "mse",
    "layers": [{"type": "dense", "units": 1}]}, "optimizer": "sgd",
    "data": {"dataset": "synthetic_linear", "num_examples": 40}, "batch_size": 8,
    "schedule": {"steps": 10}, "partitioner": "none", "seed": 5})";

VariablePlanProto LinearPlan() {
  VariablePlanProto plan;
  plan.set_num_ps(1);
  const std::pair<const char*, std::vector<int64_t>> vars[] = {{"dense/kernel", {2, 1}}, {"dense/bias", {1}}};
  for (const auto& [name, shape] : vars) {
    auto* v = plan.add_variables();
    v->set_name(name);
    v->set_dtype(DT_FLOAT);
    auto* s = v->add_shards();
    s->set_shard_name(name);
    s->set_variable_name(name);
    s->set_rows(shape[0]);
    s->set_dtype(DT_FLOAT);
    for (int64_t d : shape) v->add_shape(d), s->add_full_shape(d);
  }
  return plan;
}

TEST(WorkerServiceTest, ServesTheWorkerOverGrpc) {
  FakePsClient ps(0);
  ps.CreateFromPlan(LinearPlan(), [](const std::string&, int64_t, int64_t) { return 0.f; });
  WorkerOptions options;
  options.task = "worker:0";
  Worker worker(
      Env::Default(), options,
      [&ps](const std::string&, int) -> absl::StatusOr<std::unique_ptr<PsClient>> {
        return std::unique_ptr<PsClient>(new BorrowedPsClient(&ps));
      },
      NewCpuGradientComputer);
  WorkerServiceImpl service(&worker);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);
  auto client = NewGrpcWorkerClient(absl::StrCat("127.0.0.1:", port), "worker:0 at test", TlsConfig());

  HandshakeRequest hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_caller("chief:0");
  HandshakeResponse hi;
  ASSERT_TRUE(client->Handshake(hello, &hi, 5000).ok());
  EXPECT_EQ(hi.task(), "worker:0");

  RunStepsRequest run;
  run.set_num_steps(2);
  RunStepsResponse done;
  const absl::Status early = client->RunSteps(run, &done, 5000);
  EXPECT_EQ(early.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(early.message().find("worker:0 at test"), std::string::npos) << early;

  ConfigureRequest configure;
  configure.set_protocol_version(kProtocolVersion);
  configure.set_job_spec_json(kJob);
  *configure.mutable_plan() = LinearPlan();
  configure.add_ps_addresses("fake:1");
  configure.set_num_workers(1);
  ConfigureResponse configured;
  ASSERT_TRUE(client->Configure(configure, &configured, 10000).ok());
  ASSERT_TRUE(client->RunSteps(run, &done, 10000).ok());
  EXPECT_EQ(done.steps_done(), 2);
  EXPECT_EQ(done.examples(), 16);
  EXPECT_EQ(ps.pushes().size(), 2u);

  EvaluateRequest eval;
  eval.set_num_shards(1);
  EvaluateResponse result;
  ASSERT_TRUE(client->Evaluate(eval, &result, 10000).ok());
  EXPECT_EQ(result.examples(), 10);
  server->Shutdown();
}

TEST(WorkerServiceTest, DeadWorkerIsUnavailable) {
  // Bind a port, then close it so nothing listens there.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  auto client = NewGrpcWorkerClient(absl::StrCat("127.0.0.1:", port), "worker:3", TlsConfig());
  HandshakeRequest hello;
  HandshakeResponse hi;
  const absl::Status s = client->Handshake(hello, &hi, 2000);
  EXPECT_TRUE(s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("worker:3"), std::string::npos) << s;
}

// With TLS, only the chief may configure, run, evaluate on or stop a worker: another worker's
// certificate is refused (PERMISSION_DENIED naming caller and call), a stranger cannot connect.
TEST(WorkerServiceTest, WithTlsOnlyTheChiefDrivesAWorker) {
  FakePsClient ps(0);
  ps.CreateFromPlan(LinearPlan(), [](const std::string&, int64_t, int64_t) { return 0.f; });
  WorkerOptions options;
  options.task = "worker:0";
  Worker worker(
      Env::Default(), options,
      [&ps](const std::string&, int) -> absl::StatusOr<std::unique_ptr<PsClient>> {
        return std::unique_ptr<PsClient>(new BorrowedPsClient(&ps));
      },
      NewCpuGradientComputer);
  testing_util::TestCa ca;
  std::atomic<int> stops{0};
  std::string log;
  absl::Mutex log_mu;
  auto server = WorkerGrpcServer::Start(
      &worker, "127.0.0.1:0",
      [&stops](const ShutdownRequest&) {
        ++stops;
        return absl::OkStatus();
      },
      nullptr, ca.For("worker:0"), [&](const std::string& line) {
        absl::MutexLock l(&log_mu);
        log += line + "\n";
      });
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = absl::StrCat("127.0.0.1:", (*server)->port());
  ConfigureRequest configure;
  configure.set_protocol_version(kProtocolVersion);
  configure.set_job_spec_json(kJob);
  *configure.mutable_plan() = LinearPlan();
  configure.add_ps_addresses("ps");
  configure.set_num_workers(1);
  ConfigureResponse configured;
  ShutdownRequest stop;
  ShutdownResponse stopped;

  auto other = NewGrpcWorkerClient(address, "worker:0", ca.For("worker:1"));
  absl::Status s = other->Configure(configure, &configured, 20000);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("worker:1 may not call pstrain.WorkerService/Configure"), std::string::npos) << s;
  EXPECT_EQ(other->Shutdown(stop, &stopped, 20000).code(), absl::StatusCode::kPermissionDenied);
  RunStepsRequest run;
  RunStepsResponse ran;
  EXPECT_EQ(other->RunSteps(run, &ran, 20000).code(), absl::StatusCode::kPermissionDenied);
  testing_util::TestCa stranger_ca("another CA");
  for (const TlsConfig& tls : {TlsConfig(), stranger_ca.For("chief:0")}) {
    auto stranger = NewGrpcWorkerClient(address, "worker:0", tls);
    EXPECT_FALSE(stranger->Shutdown(stop, &stopped, 20000).ok());
    EXPECT_FALSE(stranger->Configure(configure, &configured, 20000).ok());
  }
  EXPECT_EQ(stops.load(), 0);

  auto chief = NewGrpcWorkerClient(address, "worker:0", ca.For("chief:0"));
  s = chief->Configure(configure, &configured, 20000);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(chief->Shutdown(stop, &stopped, 20000).ok());
  EXPECT_EQ(stops.load(), 1);
  absl::MutexLock l(&log_mu);
  EXPECT_NE(log.find("refused pstrain.WorkerService/Configure from worker:1"), std::string::npos) << log;
}

}  // namespace
}  // namespace pstrain
