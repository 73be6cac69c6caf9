#include "ps/client/local_ps_client.h"

#include "absl/synchronization/notification.h"

namespace pstrain {
namespace {

// Runs an asynchronous PsServer entry point and waits for its completion.
template <typename Request, typename Response>
absl::Status Wait(PsServer* server, void (PsServer::*method)(const Request*, Response*, PsServer::DoneCallback),
                  const Request& request, Response* response) {
  absl::Notification finished;
  absl::Status result;
  (server->*method)(&request, response, [&](absl::Status s) {
    result = std::move(s);
    finished.Notify();
  });
  finished.WaitForNotification();
  return result;
}

}  // namespace

absl::Status LocalPsClient::Handshake(const HandshakeRequest& request, HandshakeResponse* response) {
  return server_->Handshake(request, response);
}
absl::Status LocalPsClient::CreateShards(const CreateShardsRequest& request, CreateShardsResponse* response) {
  return server_->CreateShards(request, response);
}
absl::Status LocalPsClient::Pull(const PullRequest& request, PullResponse* response) {
  return Wait(server_, &PsServer::Pull, request, response);
}
absl::Status LocalPsClient::Push(const PushRequest& request, PushResponse* response) {
  return Wait(server_, &PsServer::Push, request, response);
}
absl::Status LocalPsClient::PullKeys(const PullKeysRequest& request, PullKeysResponse* response) {
  return server_->PullKeys(request, response);
}

absl::Status LocalPsClient::PushKeys(const PushKeysRequest& request, PushKeysResponse* response) {
  return server_->PushKeys(request, response);
}

absl::Status LocalPsClient::Save(const SaveRequest& request, SaveResponse* response) {
  return server_->Save(request, response);
}
absl::Status LocalPsClient::Restore(const RestoreRequest& request, RestoreResponse* response) {
  return server_->Restore(request, response);
}
absl::Status LocalPsClient::Promote(const PromoteRequest& request, PromoteResponse* response) {
  return server_->Promote(request, response);
}
absl::Status LocalPsClient::AttachBackup(const AttachBackupRequest& request, AttachBackupResponse* response) {
  return server_->AttachBackup(request, response);
}
absl::Status LocalPsClient::InstallReplica(const ReplicaStateRequest& request, ReplicaStateResponse* response) {
  return server_->InstallReplica(request, response);
}
absl::Status LocalPsClient::GetStats(const PsStatsRequest& request, PsStatsResponse* response) {
  return server_->GetStats(request, response);
}

}  // namespace pstrain
