#include "ps/ps_service.h"

#include "common/grpc_status.h"
#include "ps/ps_stream_reactors.h"

namespace pstrain {
namespace {

grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context, const absl::Status& s) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* PsServiceImpl::Handshake(grpc::CallbackServerContext* context,
                                                   const HandshakeRequest* request, HandshakeResponse* response) {
  return FinishNow(context, server_->Handshake(*request, response));
}

// Checkpoint writes and shard creation run inline: they are bounded local work, not waits.
grpc::ServerUnaryReactor* PsServiceImpl::CreateShards(grpc::CallbackServerContext* context,
                                                      const CreateShardsRequest* request,
                                                      CreateShardsResponse* response) {
  return FinishNow(context, server_->CreateShards(*request, response));
}

grpc::ServerUnaryReactor* PsServiceImpl::Pull(grpc::CallbackServerContext* context, const PullRequest* request,
                                              PullResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  server_->Pull(request, response, [reactor](absl::Status s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

grpc::ServerUnaryReactor* PsServiceImpl::Push(grpc::CallbackServerContext* context, const PushRequest* request,
                                              PushResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  server_->Push(request, response, [reactor](absl::Status s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

grpc::ServerWriteReactor<TensorChunk>* PsServiceImpl::PullStream(grpc::CallbackServerContext* context,
                                                                 const PullRequest* request) {
  return new PullStreamReactor(server_, request);
}

grpc::ServerReadReactor<PushChunk>* PsServiceImpl::PushStream(grpc::CallbackServerContext* context,
                                                              PushResponse* response) {
  return new PushStreamReactor(server_, response);
}

grpc::ServerUnaryReactor* PsServiceImpl::Save(grpc::CallbackServerContext* context, const SaveRequest* request,
                                              SaveResponse* response) {
  return FinishNow(context, server_->Save(*request, response));
}

grpc::ServerUnaryReactor* PsServiceImpl::Restore(grpc::CallbackServerContext* context, const RestoreRequest* request,
                                                 RestoreResponse* response) {
  return FinishNow(context, server_->Restore(*request, response));
}

grpc::ServerUnaryReactor* PsServiceImpl::GetStats(grpc::CallbackServerContext* context,
                                                  const PsStatsRequest* request, PsStatsResponse* response) {
  return FinishNow(context, server_->GetStats(*request, response));
}

}  // namespace pstrain
