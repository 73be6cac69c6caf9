#include "ps/transport/grpc_transport.h"

#include "absl/time/clock.h"
#include "common/rpc/grpc_status.h"
#include "grpcpp/client_context.h"

namespace pstrain {

GrpcTransport::GrpcTransport(std::shared_ptr<grpc::Channel> channel, std::string peer)
    : peer_(std::move(peer)), stub_(PsService::NewStub(std::move(channel))) {}

absl::Status GrpcTransport::Pull(const PullRequest& request, PullResponse* response, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return FromGrpcStatus(stub_->Pull(&context, request, response), peer_);
}

absl::Status GrpcTransport::Push(const PushRequest& request, PushResponse* response, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return FromGrpcStatus(stub_->Push(&context, request, response), peer_);
}

}  // namespace pstrain
