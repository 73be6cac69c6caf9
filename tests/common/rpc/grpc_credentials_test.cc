// Mutual TLS and the call policy on a real gRPC server on 127.0.0.1: who may call what, checked
// before any handler runs, by the caller's certificate.
#include "common/rpc/grpc_credentials.h"

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/security/call_policy.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "proto/health.grpc.pb.h"
#include "tests/test_util/test_certs.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::TestCa;

TEST(CallPolicy, TheChiefMayCallAnythingOthersWhatTheirRoleNeeds) {
  EXPECT_TRUE(AuthorizeCall("chief:0", "/pstrain.PsService/CreateShards").ok());
  EXPECT_TRUE(AuthorizeCall("chief:0", "/pstrain.WorkerService/Shutdown").ok());
  EXPECT_TRUE(AuthorizeCall("worker:3", kPsPushMethod).ok());
  EXPECT_TRUE(AuthorizeCall("worker:3", kPsPullMethod).ok());
  EXPECT_TRUE(AuthorizeCall("ps:1", kPsPushMethod).ok());  // a primary forwarding updates to a backup
  EXPECT_TRUE(AuthorizeCall("evaluator:0", kPsPullMethod).ok());
  EXPECT_TRUE(AuthorizeCall("evaluator:0", "/grpc.health.v1.Health/Check").ok());
  for (const char* chief_only :
       {"/pstrain.PsService/CreateShards", "/pstrain.PsService/Restore", "/pstrain.PsService/Save",
        "/pstrain.PsService/Shutdown", "/pstrain.WorkerService/Configure", "/pstrain.WorkerService/RunSteps",
        "/pstrain.WorkerService/Shutdown", "/pstrain.Unknown/Call"}) {
    absl::Status s = AuthorizeCall("worker:3", chief_only);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << chief_only;
    EXPECT_THAT(std::string(s.message()), HasSubstr("worker:3 may not call " + MethodName(chief_only)));
  }
  EXPECT_EQ(AuthorizeCall("evaluator:0", kPsPushMethod).code(), absl::StatusCode::kPermissionDenied);
  for (const char* stranger : {"", "admin", "worker", "worker:x", "chief:", ":0", "chiefs:0"}) {
    EXPECT_EQ(AuthorizeCall(stranger, kPsPullMethod).code(), absl::StatusCode::kPermissionDenied) << stranger;
  }
}

// Answers every call it gets with OK: a call that reaches it was let through by the policy.
class AnswerEverything : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override {
    class Reactor : public grpc::ServerGenericBidiReactor {
     public:
      Reactor() {
        grpc::Slice empty("", 0);
        response_ = grpc::ByteBuffer(&empty, 1);
        StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
      }
      void OnDone() override { delete this; }

     private:
      grpc::ByteBuffer response_;
    };
    return new Reactor;
  }
};

class TlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.RegisterCallbackGenericService(&everything_);
    builder.AddListeningPort("127.0.0.1:0",
                             MakeServerCredentials(ca_.For("ps:0"),
                                                   [this](const std::string& line) {
                                                     absl::MutexLock l(&mu_);
                                                     log_ += line + "\n";
                                                   }),
                             &port_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    server_->GetHealthCheckService()->SetServingStatus(true);
  }
  void TearDown() override { server_->Shutdown(); }

  std::shared_ptr<grpc::Channel> Channel(const TlsConfig& tls) {
    return grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), MakeChannelCredentials(tls));
  }
  // A call of `method` with an empty message: OK when the policy let it through, PERMISSION_DENIED
  // when it did not.
  grpc::Status CallMethod(const TlsConfig& tls, const std::string& method) {
    grpc::GenericStub stub(Channel(tls));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    grpc::Slice empty("", 0);
    grpc::ByteBuffer request(&empty, 1), response;
    grpc::Status result;
    absl::Notification done;
    stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
      result = s;
      done.Notify();
    });
    done.WaitForNotification();
    return result;
  }
  grpc::Status Health(const TlsConfig& tls) {
    auto stub = grpc::health::v1::Health::NewStub(Channel(tls));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    return stub->Check(&context, request, &response);
  }
  std::string Log() {
    absl::MutexLock l(&mu_);
    return log_;
  }

  AnswerEverything everything_;
  TestCa ca_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  std::string log_ ABSL_GUARDED_BY(mu_);
};

TEST_F(TlsServerTest, TheChiefPassesAWorkerIsRefusedChiefOnlyCallsAndTheRefusalIsLogged) {
  EXPECT_TRUE(CallMethod(ca_.For("chief:0"), "/pstrain.PsService/Shutdown").ok());
  const grpc::Status s = CallMethod(ca_.For("worker:1"), "/pstrain.PsService/Shutdown");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("worker:1 may not call pstrain.PsService/Shutdown"));
  EXPECT_THAT(Log(), HasSubstr("refused pstrain.PsService/Shutdown from worker:1"));
  EXPECT_TRUE(CallMethod(ca_.For("worker:1"), kPsPushMethod).ok());
  EXPECT_TRUE(Health(ca_.For("evaluator:0")).ok());
}

TEST_F(TlsServerTest, StrangersCannotConnect) {
  // No certificate at all: plaintext against a TLS port.
  EXPECT_EQ(Health(TlsConfig()).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(CallMethod(TlsConfig(), "/pstrain.PsService/Shutdown").error_code(), grpc::StatusCode::UNAVAILABLE);
  // A certificate of another CA, even one that names the chief.
  TestCa stranger("another CA");
  TlsConfig forged = stranger.For("chief:0");
  EXPECT_EQ(CallMethod(forged, "/pstrain.PsService/Shutdown").error_code(), grpc::StatusCode::UNAVAILABLE);
  // TLS with the right CA but no certificate of its own.
  TlsConfig anonymous = ca_.For("chief:0");
  anonymous.cert_pem.clear();
  anonymous.key_pem.clear();
  EXPECT_FALSE(CallMethod(anonymous, "/pstrain.PsService/Shutdown").ok());
  EXPECT_FALSE(CallMethod(anonymous, kPsPullMethod).ok());
}

}  // namespace
}  // namespace pstrain
