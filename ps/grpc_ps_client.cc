#include "ps/grpc_ps_client.h"

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "grpcpp/grpcpp.h"

namespace pstrain {

grpc::ChannelArguments PsChannelArguments() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  // One connection per client, not shared with other clients in the process: parallel clients
  // then get parallel TCP streams.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return args;
}

GrpcPsClient::GrpcPsClient(const std::string& address, const std::string& peer_name, absl::Duration deadline)
    : peer_(absl::StrCat(peer_name, " at ", address)),
      deadline_(deadline),
      stub_(PsService::NewStub(
          grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), PsChannelArguments()))) {}

void GrpcPsClient::Prepare(grpc::ClientContext* context) const {
  context->set_deadline(absl::ToChronoTime(absl::Now() + deadline_));
}

absl::Status GrpcPsClient::Handshake(const HandshakeRequest& request, HandshakeResponse* response) {
  grpc::ClientContext context;
  Prepare(&context);
  return FromGrpcStatus(stub_->Handshake(&context, request, response), peer_);
}

absl::Status GrpcPsClient::CreateShards(const CreateShardsRequest& request, CreateShardsResponse* response) {
  grpc::ClientContext context;
  Prepare(&context);
  return FromGrpcStatus(stub_->CreateShards(&context, request, response), peer_);
}

absl::Status GrpcPsClient::Pull(const PullRequest& request, PullResponse* response) {
  grpc::ClientContext context;
  Prepare(&context);
  return FromGrpcStatus(stub_->Pull(&context, request, response), peer_);
}

absl::Status GrpcPsClient::Push(const PushRequest& request, PushResponse* response) {
  grpc::ClientContext context;
  Prepare(&context);
  return FromGrpcStatus(stub_->Push(&context, request, response), peer_);
}

absl::Status GrpcPsClient::Save(const SaveRequest& request, SaveResponse* response) {
  grpc::ClientContext context;
  Prepare(&context);
  return FromGrpcStatus(stub_->Save(&context, request, response), peer_);
}

absl::Status GrpcPsClient::Restore(const RestoreRequest& request, RestoreResponse* response) {
  grpc::ClientContext context;
  Prepare(&context);
  return FromGrpcStatus(stub_->Restore(&context, request, response), peer_);
}

absl::Status GrpcPsClient::GetStats(const PsStatsRequest& request, PsStatsResponse* response) {
  grpc::ClientContext context;
  Prepare(&context);
  return FromGrpcStatus(stub_->GetStats(&context, request, response), peer_);
}

std::unique_ptr<PsClient> NewGrpcPsClient(const std::string& address, const std::string& peer_name) {
  return std::make_unique<GrpcPsClient>(address, peer_name, absl::Minutes(5));
}

}  // namespace pstrain
