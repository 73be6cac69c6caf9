// The chief's status service over real gRPC on 127.0.0.1: handshake, status, health.
#include "chief/server/chief_service.h"

#include "common/wire/protocol_version.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

TEST(ChiefServiceTest, AnswersHandshakeStatusAndHealth) {
  ChiefServiceImpl service("chief:0", [] {
    ChiefStatusResponse r;
    r.set_state("training");
    r.set_global_step(42);
    return r;
  });
  int port = 0;
  auto server = StartChiefServer("127.0.0.1:0", &service, &port);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT(port, 0);
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  auto stub = ChiefService::NewStub(channel);
  {
    grpc::ClientContext context;
    HandshakeRequest request;
    HandshakeResponse response;
    ASSERT_TRUE(stub->Handshake(&context, request, &response).ok());
    EXPECT_EQ(response.task(), "chief:0");
    EXPECT_EQ(response.protocol_version(), kProtocolVersion);
  }
  {
    grpc::ClientContext context;
    ChiefStatusResponse response;
    ASSERT_TRUE(stub->GetStatus(&context, ChiefStatusRequest(), &response).ok());
    EXPECT_EQ(response.state(), "training");
    EXPECT_EQ(response.global_step(), 42);
  }
  {
    // grpc.health.v1.Health/Check with an empty request: status SERVING (1) is field 1 = 1.
    grpc::GenericStub generic(channel);
    grpc::ClientContext context;
    grpc::ByteBuffer request, response;
    grpc::Slice empty("", 0);
    request = grpc::ByteBuffer(&empty, 1);
    grpc::CompletionQueue cq;
    auto call = generic.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request, &cq);
    call->StartCall();
    grpc::Status status;
    call->Finish(&response, &status, reinterpret_cast<void*>(1));
    void* tag;
    bool ok;
    ASSERT_TRUE(cq.Next(&tag, &ok));
    ASSERT_TRUE(status.ok()) << status.error_message();
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(response.Dump(&slices).ok());
    std::string bytes;
    for (auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    EXPECT_EQ(bytes, std::string("\x08\x01", 2));
  }
  (*server)->Shutdown();
}

}  // namespace
}  // namespace pstrain
