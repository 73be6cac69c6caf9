#include "ps/server/ps_service.h"

#include "common/rpc/grpc_status.h"

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

// Shard creation and checkpoint I/O can take seconds: they run on the ps's background thread.
grpc::ServerUnaryReactor* PsServiceImpl::CreateShards(grpc::CallbackServerContext* context,
                                                      const CreateShardsRequest* request,
                                                      CreateShardsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  server_->CreateShardsInBackground(request, response, [reactor](absl::Status s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
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

// Dynamic table shards: answered on the calling thread (a lookup or an apply, never a wait).
grpc::ServerUnaryReactor* PsServiceImpl::PullKeys(grpc::CallbackServerContext* context, const PullKeysRequest* request,
                                                  PullKeysResponse* response) {
  return FinishNow(context, server_->PullKeys(*request, response));
}

grpc::ServerUnaryReactor* PsServiceImpl::PushKeys(grpc::CallbackServerContext* context, const PushKeysRequest* request,
                                                  PushKeysResponse* response) {
  return FinishNow(context, server_->PushKeys(*request, response));
}

grpc::ServerUnaryReactor* PsServiceImpl::Save(grpc::CallbackServerContext* context, const SaveRequest* request,
                                              SaveResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  server_->SaveInBackground(request, response, [reactor](absl::Status s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

grpc::ServerUnaryReactor* PsServiceImpl::Restore(grpc::CallbackServerContext* context, const RestoreRequest* request,
                                                 RestoreResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  server_->RestoreInBackground(request, response, [reactor](absl::Status s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

grpc::ServerUnaryReactor* PsServiceImpl::GetStats(grpc::CallbackServerContext* context, const PsStatsRequest* request,
                                                  PsStatsResponse* response) {
  return FinishNow(context, server_->GetStats(*request, response));
}

grpc::ServerUnaryReactor* PsServiceImpl::Promote(grpc::CallbackServerContext* context, const PromoteRequest* request,
                                                 PromoteResponse* response) {
  return FinishNow(context, server_->Promote(*request, response));
}

grpc::ServerUnaryReactor* PsServiceImpl::AttachBackup(grpc::CallbackServerContext* context,
                                                      const AttachBackupRequest* request,
                                                      AttachBackupResponse* response) {
  // Sends whole shards to the backup: off the reaction thread.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  server_->AttachBackupInBackground(request, response,
                                    [reactor](absl::Status s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

grpc::ServerUnaryReactor* PsServiceImpl::InstallReplica(grpc::CallbackServerContext* context,
                                                        const ReplicaStateRequest* request,
                                                        ReplicaStateResponse* response) {
  return FinishNow(context, server_->InstallReplica(*request, response));
}

grpc::ServerUnaryReactor* PsServiceImpl::Shutdown(grpc::CallbackServerContext* context, const ShutdownRequest* request,
                                                  ShutdownResponse* response) {
  if (!on_shutdown_) return FinishNow(context, absl::UnimplementedError("this ps cannot be shut down remotely"));
  return FinishNow(context, on_shutdown_(*request));
}

}  // namespace pstrain
