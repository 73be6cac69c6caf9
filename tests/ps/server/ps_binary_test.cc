// Starts the real pstrain-ps binary on a free 127.0.0.1 port and talks to it over gRPC.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/platform/exit_codes.h"
#include "common/wire/protocol_version.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/client_unary_call.h"
#include "grpcpp/impl/rpc_method.h"
#include "gtest/gtest.h"
#include "ps/client/grpc_ps_client.h"
#include "tests/ps/ps_test_util.h"
#include "tests/test_util/loopback.h"
#include "tests/test_util/test_certs.h"

extern char** environ;

namespace pstrain {
namespace {

using testing_util::OnePull;
using testing_util::OnePush;
using testing_util::Spec;
using testing_util::ToFloats;

// grpc.health.v1.Health/Check for the whole server (service ""), without the health protos: an
// empty request; the answer {status: SERVING} encodes as the bytes 08 01.
bool HealthServing(const std::string& address) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check", grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Slice empty;
  grpc::ByteBuffer request(&empty, 1), response;
  grpc::Status s = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(channel.get(), method,
                                                                                         &context, request, &response);
  std::vector<grpc::Slice> slices;
  if (!s.ok() || !response.Dump(&slices).ok()) return false;
  std::string bytes;
  for (const grpc::Slice& slice : slices) bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  return bytes == std::string("\x08\x01", 2);
}

// Spawns pstrain-ps with TF_CONFIG set to `tf_config`; returns its pid. The child gets SIGKILL if
// this test process dies first, so a failed or killed test never leaves a ps running.
// With `log`, the child's stderr goes to that file.
pid_t Spawn(const std::string& tf_config, const std::vector<std::string>& flags, const std::string& log = "") {
  std::vector<std::string> env_strings = {"TF_CONFIG=" + tf_config};
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("TF_CONFIG=", 0) != 0) env_strings.push_back(*e);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = {PSTRAIN_PS_BINARY};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    if (!log.empty()) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 2);
    }
    ::execve(PSTRAIN_PS_BINARY, argv.data(), envp.data());
    ::_exit(127);
  }
  return pid;
}

// Kills the child at scope exit unless it was reaped (an ASSERT returning early).
struct ChildGuard {
  pid_t pid;
  bool reaped = false;
  ~ChildGuard() {
    if (!reaped && pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// Waits up to `seconds` for `pid` to exit; returns its exit code, or -1 (after killing it) on timeout.
int WaitExit(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 50; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

TEST(PsBinary, ServesOverGrpcAndStopsOnSigterm) {
  const int port = testing_util::FreeLoopbackPort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const std::string tf_config =
      R"({"cluster":{"ps":[")" + address + R"("],"worker":["127.0.0.1:1"]},"task":{"type":"ps","index":0}})";
  const pid_t pid = Spawn(tf_config, {"--listen=" + address});
  ASSERT_GT(pid, 0);
  ChildGuard guard{pid};
  // Wait for the listener first: a gRPC channel that saw "connection refused" backs off for seconds.
  for (int i = 0; i < 400 && !testing_util::LoopbackAccepts(port); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  GrpcPsClient client(address, "ps:0", absl::Seconds(5), TransportConfig());
  HandshakeRequest hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_caller("test");
  HandshakeResponse welcome;
  absl::Status s;
  for (int i = 0; i < 100; ++i) {  // up to ~20 s for the process to start listening
    s = client.Handshake(hello, &welcome);
    if (s.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(welcome.task(), "ps:0");
  EXPECT_TRUE(HealthServing(address));

  CreateShardsRequest create;
  create.set_protocol_version(kProtocolVersion);
  *create.add_shards() = Spec("w", {2048, 1024}, 0, 2048, "ones");  // 8 MiB: above gRPC's default limit
  *create.mutable_optimizer() = testing_util::Sgd(0.5);
  create.set_initialize(true);
  CreateShardsResponse created;
  ASSERT_TRUE(client.CreateShards(create, &created).ok());
  PushResponse pushed;
  ASSERT_TRUE(client.Push(OnePush("w", {2048, 1024}, std::vector<float>(2048 * 1024, 1.0f)), &pushed).ok());
  EXPECT_EQ(pushed.versions(0), 1);
  PullResponse pulled;
  ASSERT_TRUE(client.Pull(OnePull("w"), &pulled).ok());
  std::vector<float> v = ToFloats(pulled.values(0).value());
  ASSERT_EQ(v.size(), 2048u * 1024u);
  EXPECT_EQ(v[0], 0.5f);
  EXPECT_EQ(v.back(), 0.5f);
  absl::Status missing = client.Pull(OnePull("nope"), &pulled);
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("ps:0 at " + address), std::string::npos) << missing;

  const auto stop = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  guard.reaped = true;  // WaitExit reaps it (or kills and reaps it on timeout)
  EXPECT_EQ(WaitExit(pid, 10), kExitStoppedBySignal);
  std::cerr << "pstrain-ps stopped "
            << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - stop).count()
            << " ms after SIGTERM\n";
}

void WriteFile(const std::string& path, const std::string& data) { std::ofstream(path) << data; }

// The ps with mutual TLS: strangers (no certificate, or one of another CA) can neither pull, push
// nor stop it; a worker's certificate pulls and pushes but is refused the chief's calls (logged,
// naming the caller and the call); the chief's stops it.
TEST(PsBinary, WithTlsOnlyTheClusterReachesItAndOnlyTheChiefStopsIt) {
  const std::string dir = ::testing::TempDir() + "/ps_binary_tls_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  testing_util::TestCa ca;
  const TlsConfig ps = ca.For("ps:0");
  WriteFile(dir + "/ca.crt", ps.ca_pem);
  WriteFile(dir + "/ps-0.crt", ps.cert_pem);
  WriteFile(dir + "/ps-0.key", ps.key_pem);
  const int port = testing_util::FreeLoopbackPort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const std::string tf_config =
      R"({"cluster":{"ps":[")" + address + R"("],"worker":["127.0.0.1:1"]},"task":{"type":"ps","index":0}})";
  const std::string log = dir + "/ps-0.log";
  const pid_t pid = Spawn(tf_config, {"--listen=" + address, "--tls_dir=" + dir}, log);
  ASSERT_GT(pid, 0);
  ChildGuard guard{pid};
  for (int i = 0; i < 400 && !testing_util::LoopbackAccepts(port); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto client = [&](const TlsConfig& tls, const std::string& caller, TransportKind kind) {
    TransportConfig c;
    c.tls = tls;
    c.caller = caller;
    c.kind = kind;
    return std::make_unique<GrpcPsClient>(address, "ps:0", absl::Seconds(5), c);
  };
  auto chief = client(ca.For("chief:0"), "chief:0", TransportKind::kTensorChannel);
  HandshakeRequest hello;
  hello.set_protocol_version(kProtocolVersion);
  HandshakeResponse welcome;
  absl::Status s;
  for (int i = 0; i < 100 && !(s = chief->Handshake(hello, &welcome)).ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(s.ok()) << s;
  CreateShardsRequest create;
  create.set_protocol_version(kProtocolVersion);
  *create.add_shards() = Spec("w", {4}, 0, 4, "ones");
  *create.mutable_optimizer() = testing_util::Sgd(0.5);
  create.set_initialize(true);
  CreateShardsResponse created;
  ASSERT_TRUE(chief->CreateShards(create, &created).ok());
  EXPECT_FALSE(HealthServing(address));  // plaintext gRPC gets nowhere

  testing_util::TestCa stranger_ca("another CA");
  for (TransportKind kind : {TransportKind::kTensorChannel, TransportKind::kGrpc}) {
    for (const TlsConfig& tls : {TlsConfig(), stranger_ca.For("chief:0")}) {
      auto stranger = client(tls, "chief:0", kind);
      PullResponse pulled;
      PushResponse pushed;
      ShutdownResponse stopped;
      ShutdownRequest stop;
      stop.set_reason("a stranger");
      EXPECT_FALSE(stranger->Pull(OnePull("w"), &pulled).ok());
      EXPECT_FALSE(stranger->Push(OnePush("w", {4}, {1, 1, 1, 1}), &pushed).ok());
      EXPECT_FALSE(stranger->Shutdown(stop, &stopped).ok());
      EXPECT_FALSE(stranger->CreateShards(create, &created).ok());
    }
  }
  auto worker = client(ca.For("worker:0"), "worker:0", TransportKind::kTensorChannel);
  PushResponse pushed;
  ASSERT_TRUE(worker->Push(OnePush("w", {4}, {1, 1, 1, 1}), &pushed).ok());
  PullResponse pulled;
  ASSERT_TRUE(worker->Pull(OnePull("w"), &pulled).ok());
  EXPECT_EQ(ToFloats(pulled.values(0).value()), std::vector<float>(4, 0.5f));  // only the worker's push applied
  ShutdownRequest stop;
  stop.set_reason("a worker tries");
  ShutdownResponse stopped;
  s = worker->Shutdown(stop, &stopped);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("worker:0 may not call pstrain.PsService/Shutdown"), std::string::npos) << s;
  EXPECT_EQ(worker->CreateShards(create, &created).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), 0);  // still serving
  auto evaluator = client(ca.For("evaluator:0"), "evaluator:0", TransportKind::kTensorChannel);
  EXPECT_TRUE(evaluator->Pull(OnePull("w"), &pulled).ok());
  EXPECT_EQ(evaluator->Push(OnePush("w", {4}, {1, 1, 1, 1}), &pushed).code(), absl::StatusCode::kPermissionDenied);

  stop.set_reason("the job failed");
  ASSERT_TRUE(chief->Shutdown(stop, &stopped).ok());
  guard.reaped = true;
  EXPECT_EQ(WaitExit(pid, 20), 1);  // stopped by the chief: a runtime failure
  std::ifstream in(log);
  const std::string logged((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(logged.find("mutual TLS as ps:0"), std::string::npos) << logged;
  EXPECT_NE(logged.find("refused pstrain.PsService/Shutdown from worker:0"), std::string::npos) << logged;
  EXPECT_NE(logged.find("refused pstrain.PsService/Push (tensor channel) from evaluator:0"), std::string::npos)
      << logged;
  EXPECT_NE(logged.find("refused a tensor channel connection"), std::string::npos) << logged;
  std::filesystem::remove_all(dir);
}

// A plaintext ps says so at start-up; a certificate for another task is a bad configuration.
TEST(PsBinary, PlaintextWarnsAndAForeignCertificateExitsTwo) {
  const std::string dir = ::testing::TempDir() + "/ps_binary_certs_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  testing_util::TestCa ca;
  const TlsConfig other = ca.For("worker:0");
  WriteFile(dir + "/ca.crt", other.ca_pem);
  WriteFile(dir + "/ps-0.crt", other.cert_pem);
  WriteFile(dir + "/ps-0.key", other.key_pem);
  const std::string tf_config = R"({"cluster":{"ps":["127.0.0.1:1"],"worker":["127.0.0.1:2"]},
                                    "task":{"type":"ps","index":0}})";
  const pid_t wrong = Spawn(tf_config, {"--tls_dir=" + dir}, dir + "/wrong.log");
  EXPECT_EQ(WaitExit(wrong, 20), 2);
  std::ifstream in(dir + "/wrong.log");
  const std::string logged((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(logged.find("is for worker:0, but this task is ps:0"), std::string::npos) << logged;

  const int port = testing_util::FreeLoopbackPort();
  const pid_t plain = Spawn(tf_config, {"--listen=127.0.0.1:" + std::to_string(port)}, dir + "/plain.log");
  ChildGuard guard{plain};
  for (int i = 0; i < 400 && !testing_util::LoopbackAccepts(port); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(plain, SIGTERM);
  guard.reaped = true;
  EXPECT_EQ(WaitExit(plain, 10), kExitStoppedBySignal);
  std::ifstream plain_in(dir + "/plain.log");
  const std::string plain_log((std::istreambuf_iterator<char>(plain_in)), std::istreambuf_iterator<char>());
  EXPECT_NE(plain_log.find("WARNING: plaintext"), std::string::npos) << plain_log;
  std::filesystem::remove_all(dir);
}

TEST(PsBinary, BadTfConfigExitsTwo) {
  const pid_t wrong_type = Spawn(R"({"cluster":{"ps":["127.0.0.1:1"],"worker":["127.0.0.1:2"]},
                                     "task":{"type":"worker","index":0}})",
                                 {});
  EXPECT_EQ(WaitExit(wrong_type, 20), 2);
  const pid_t not_json = Spawn("{cluster", {});
  EXPECT_EQ(WaitExit(not_json, 20), 2);
}

}  // namespace
}  // namespace pstrain
