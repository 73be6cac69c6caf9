#include "worker/client/grpc_worker_client.h"

#include <chrono>

#include "common/rpc/grpc_credentials.h"
#include "common/rpc/grpc_status.h"
#include "grpcpp/grpcpp.h"
#include "proto/worker.grpc.pb.h"

namespace pstrain {
namespace {

class GrpcWorkerClient : public WorkerClient {
 public:
  GrpcWorkerClient(const std::string& address, std::string peer, const TlsConfig& tls) : peer_(std::move(peer)) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    stub_ = pstrain::WorkerService::NewStub(grpc::CreateCustomChannel(address, MakeChannelCredentials(tls), args));
  }

  std::string peer() const override { return peer_; }

  absl::Status Handshake(const HandshakeRequest& request, HandshakeResponse* response, int64_t timeout_ms) override {
    return Call(&pstrain::WorkerService::Stub::Handshake, request, response, timeout_ms);
  }
  absl::Status Configure(const ConfigureRequest& request, ConfigureResponse* response, int64_t timeout_ms) override {
    return Call(&pstrain::WorkerService::Stub::Configure, request, response, timeout_ms);
  }
  absl::Status Reassign(const ReassignRequest& request, ReassignResponse* response, int64_t timeout_ms) override {
    return Call(&pstrain::WorkerService::Stub::Reassign, request, response, timeout_ms);
  }
  absl::Status RunSteps(const RunStepsRequest& request, RunStepsResponse* response, int64_t timeout_ms) override {
    return Call(&pstrain::WorkerService::Stub::RunSteps, request, response, timeout_ms);
  }
  absl::Status Evaluate(const EvaluateRequest& request, EvaluateResponse* response, int64_t timeout_ms) override {
    return Call(&pstrain::WorkerService::Stub::Evaluate, request, response, timeout_ms);
  }
  absl::Status Shutdown(const ShutdownRequest& request, ShutdownResponse* response, int64_t timeout_ms) override {
    return Call(&pstrain::WorkerService::Stub::Shutdown, request, response, timeout_ms);
  }

 private:
  template <typename Method, typename Request, typename Response>
  absl::Status Call(Method method, const Request& request, Response* response, int64_t timeout_ms) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 1));
    return FromGrpcStatus(((*stub_).*method)(&ctx, request, response), peer_);
  }

  std::string peer_;
  std::unique_ptr<pstrain::WorkerService::Stub> stub_;
};

}  // namespace

std::unique_ptr<WorkerClient> NewGrpcWorkerClient(const std::string& address, const std::string& peer_name,
                                                  const TlsConfig& tls) {
  return std::make_unique<GrpcWorkerClient>(address, peer_name, tls);
}

}  // namespace pstrain
