#include "ps/client/grpc_ps_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/rpc/grpc_credentials.h"
#include "common/rpc/grpc_status.h"
#include "grpcpp/grpcpp.h"
#include "ps/transport/grpc_transport.h"
#include "ps/transport/grpc_tuning.h"
#include "ps/transport/tensor_channel_client.h"

namespace pstrain {

GrpcPsClient::GrpcPsClient(const std::string& address, const std::string& peer_name, absl::Duration deadline,
                           const TransportConfig& config)
    : peer_(absl::StrCat(peer_name, " at ", address)),
      deadline_(deadline),
      channel_(grpc::CreateCustomChannel(address, MakeChannelCredentials(config.tls), PsChannelArguments())),
      stub_(PsService::NewStub(channel_)) {
  if (config.kind == TransportKind::kGrpc) {
    transport_ = std::make_unique<GrpcTransport>(channel_, peer_);
  } else {
    transport_ = std::make_unique<TensorChannelClient>(address, peer_, config);
  }
}

template <typename Request, typename Response>
absl::Status GrpcPsClient::Unary(grpc::Status (PsService::Stub::*method)(grpc::ClientContext*, const Request&,
                                                                         Response*),
                                 const Request& request, Response* response, absl::Duration deadline) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  return FromGrpcStatus((stub_.get()->*method)(&context, request, response), peer_);
}

absl::Status GrpcPsClient::Handshake(const HandshakeRequest& request, HandshakeResponse* response) {
  return Unary(&PsService::Stub::Handshake, request, response, deadline_);
}

absl::Status GrpcPsClient::CreateShards(const CreateShardsRequest& request, CreateShardsResponse* response) {
  return Unary(&PsService::Stub::CreateShards, request, response, deadline_);
}

absl::Status GrpcPsClient::Pull(const PullRequest& request, PullResponse* response) {
  return transport_->Pull(request, response, deadline_);
}

absl::Status GrpcPsClient::Push(const PushRequest& request, PushResponse* response) {
  return transport_->Push(request, response, deadline_);
}

absl::Status GrpcPsClient::PushParts(const PushRequest& header, absl::Span<const absl::string_view> payload,
                                     PushResponse* response) {
  return transport_->PushParts(header, payload, response, deadline_);
}

absl::Status GrpcPsClient::PullKeys(const PullKeysRequest& request, PullKeysResponse* response) {
  return Unary(&PsService::Stub::PullKeys, request, response, deadline_);
}

absl::Status GrpcPsClient::PushKeys(const PushKeysRequest& request, PushKeysResponse* response) {
  return Unary(&PsService::Stub::PushKeys, request, response, deadline_);
}

absl::Status GrpcPsClient::Save(const SaveRequest& request, SaveResponse* response) {
  return Unary(&PsService::Stub::Save, request, response, deadline_);
}

absl::Status GrpcPsClient::Restore(const RestoreRequest& request, RestoreResponse* response) {
  return Unary(&PsService::Stub::Restore, request, response, deadline_);
}

absl::Status GrpcPsClient::GetStats(const PsStatsRequest& request, PsStatsResponse* response) {
  return Unary(&PsService::Stub::GetStats, request, response, deadline_);
}

absl::Status GrpcPsClient::Promote(const PromoteRequest& request, PromoteResponse* response) {
  return Unary(&PsService::Stub::Promote, request, response, deadline_);
}

absl::Status GrpcPsClient::AttachBackup(const AttachBackupRequest& request, AttachBackupResponse* response) {
  return Unary(&PsService::Stub::AttachBackup, request, response, deadline_);
}

absl::Status GrpcPsClient::InstallReplica(const ReplicaStateRequest& request, ReplicaStateResponse* response) {
  return Unary(&PsService::Stub::InstallReplica, request, response, deadline_);
}

absl::Status GrpcPsClient::Shutdown(const ShutdownRequest& request, ShutdownResponse* response) {
  return Unary(&PsService::Stub::Shutdown, request, response, std::min(deadline_, absl::Seconds(3)));
}

std::unique_ptr<PsClient> NewGrpcPsClient(const std::string& address, const std::string& peer_name,
                                          const TransportConfig& config) {
  return std::make_unique<GrpcPsClient>(address, peer_name, absl::Minutes(5), config);
}

}  // namespace pstrain
