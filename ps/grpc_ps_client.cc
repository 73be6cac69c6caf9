#include "ps/grpc_ps_client.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "grpcpp/grpcpp.h"
#include "ps/grpc_stream_client.h"
#include "ps/grpc_tuning.h"
#include "ps/ps_server.h"

namespace pstrain {

BulkTransport BulkTransportFromEnv() {
  static const BulkTransport transport = [] {
    const char* env = std::getenv("PSTRAIN_PS_TRANSPORT");
    const std::string value = env == nullptr ? "" : env;
    if (value == "grpc") return BulkTransport::kGrpcStream;
    if (!value.empty() && value != "tensor_channel") {
      std::cerr << "pstrain: PSTRAIN_PS_TRANSPORT=" << value
                << " is not a transport (grpc or tensor_channel); using tensor_channel\n";
    }
    return BulkTransport::kTensorChannel;
  }();
  return transport;
}

GrpcPsClient::GrpcPsClient(const std::string& address, const std::string& peer_name, absl::Duration deadline)
    : peer_(absl::StrCat(peer_name, " at ", address)),
      deadline_(deadline),
      channel_(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), PsChannelArguments())),
      stub_(PsService::NewStub(channel_)),
      streams_(channel_),
      tensor_channel_(address, peer_),
      bulk_transport_(BulkTransportFromEnv()) {}

int64_t GrpcPsClient::StreamThreshold() const {
  const int64_t set = stream_threshold_bytes_.load();
  if (set >= 0) return set;
  return bulk_transport_ == BulkTransport::kTensorChannel ? 0 : kDefaultStreamThresholdBytes;
}

void GrpcPsClient::Prepare(grpc::ClientContext* context) const {
  context->set_deadline(absl::ToChronoTime(absl::Now() + deadline_));
}

template <typename Request, typename Response>
absl::Status GrpcPsClient::Unary(grpc::Status (PsService::Stub::*method)(grpc::ClientContext*, const Request&,
                                                                        Response*),
                                 const Request& request, Response* response) {
  grpc::ClientContext context;
  Prepare(&context);
  return FromGrpcStatus((stub_.get()->*method)(&context, request, response), peer_);
}

absl::Status GrpcPsClient::Handshake(const HandshakeRequest& request, HandshakeResponse* response) {
  return Unary(&PsService::Stub::Handshake, request, response);
}

absl::Status GrpcPsClient::CreateShards(const CreateShardsRequest& request, CreateShardsResponse* response) {
  return Unary(&PsService::Stub::CreateShards, request, response);
}

absl::Status GrpcPsClient::Pull(const PullRequest& request, PullResponse* response) {
  if (PullGoesInBulk(request)) return PullInBulk(request, response);
  absl::Status s = Unary(&PsService::Stub::Pull, request, response);
  if (s.ok()) RememberSizes(*response);
  return s;
}

absl::Status GrpcPsClient::Push(const PushRequest& request, PushResponse* response) {
  int64_t bytes = 0;
  for (const ShardGradient& g : request.gradients()) bytes += static_cast<int64_t>(g.gradient().data().size());
  for (const SparseRows& r : request.sparse()) bytes += static_cast<int64_t>(r.ids().size() + r.values().size());
  if (bytes >= StreamThreshold() && BulkCarries(request.sparse_size())) return PushInBulk(request, response);
  return Unary(&PsService::Stub::Push, request, response);
}

bool GrpcPsClient::BulkCarries(int sparse_entries) const {
  // The gRPC streams carry dense tensors only; a call with a table's rows goes unary instead (the
  // rows of one step are small, and the unary call carries them as inline bytes).
  return sparse_entries == 0 || bulk_transport_ == BulkTransport::kTensorChannel;
}

bool GrpcPsClient::PullGoesInBulk(const PullRequest& request) const {
  if (!BulkCarries(request.sparse_size())) return false;
  const int64_t threshold = StreamThreshold();
  if (threshold <= 0) return true;
  if (threshold > kMaxMessageBytes) return false;  // streaming turned off
  int64_t bytes = 0;
  absl::MutexLock l(&mu_);
  for (const std::string& name : request.shard_names()) {
    auto it = shard_bytes_.find(name);
    if (it == shard_bytes_.end()) return true;  // unknown size: streaming is safe for any size
    bytes += it->second;
  }
  return bytes >= threshold;
}

void GrpcPsClient::RememberSizes(const PullResponse& response) {
  absl::MutexLock l(&mu_);
  for (const ShardValue& v : response.values()) shard_bytes_[v.name()] = static_cast<int64_t>(v.value().data().size());
}

absl::Status GrpcPsClient::Save(const SaveRequest& request, SaveResponse* response) {
  return Unary(&PsService::Stub::Save, request, response);
}

absl::Status GrpcPsClient::Restore(const RestoreRequest& request, RestoreResponse* response) {
  return Unary(&PsService::Stub::Restore, request, response);
}

absl::Status GrpcPsClient::GetStats(const PsStatsRequest& request, PsStatsResponse* response) {
  return Unary(&PsService::Stub::GetStats, request, response);
}

absl::Status GrpcPsClient::Shutdown(const ShutdownRequest& request, ShutdownResponse* response) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + std::min(deadline_, absl::Seconds(3))));
  return FromGrpcStatus(stub_->Shutdown(&context, request, response), peer_);
}

absl::Status GrpcPsClient::PullInBulk(const PullRequest& request, PullResponse* response) {
  if (bulk_transport_ == BulkTransport::kTensorChannel) {
    absl::Status s = tensor_channel_.Pull(request, response, absl::Now() + deadline_);
    if (s.ok()) RememberSizes(*response);
    return s;
  }
  grpc::ClientContext context;
  Prepare(&context);
  absl::Status s = FromGrpcStatus(streams_.Pull(&context, request, response), peer_);
  if (s.ok()) RememberSizes(*response);
  return s;
}

absl::Status GrpcPsClient::PushInBulk(const PushRequest& request, PushResponse* response) {
  if (bulk_transport_ == BulkTransport::kTensorChannel) {
    return tensor_channel_.Push(request, response, absl::Now() + deadline_);
  }
  grpc::ClientContext context;
  Prepare(&context);
  return FromGrpcStatus(streams_.Push(&context, request, response), peer_);
}

std::unique_ptr<PsClient> NewGrpcPsClient(const std::string& address, const std::string& peer_name) {
  return std::make_unique<GrpcPsClient>(address, peer_name, absl::Minutes(5));
}

}  // namespace pstrain
