// LocalPsClient: the PsClient of a PsServer in the same process (single-process training, unit
// tests with many nodes in one process). Calls block until the server finishes them, exactly as
// over the network, but without serialisation.
// Thread-safety: thread-safe; the PsServer is not owned and must outlive the client.
#ifndef PSTRAIN_PS_CLIENT_LOCAL_PS_CLIENT_H_
#define PSTRAIN_PS_CLIENT_LOCAL_PS_CLIENT_H_

#include <string>

#include "ps/client/ps_client.h"
#include "ps/store/ps_server.h"

namespace pstrain {

class LocalPsClient : public PsClient {
 public:
  explicit LocalPsClient(PsServer* server) : server_(server) {}

  std::string peer() const override { return server_->task() + " (in process)"; }
  absl::Status Handshake(const HandshakeRequest& request, HandshakeResponse* response) override;
  absl::Status CreateShards(const CreateShardsRequest& request, CreateShardsResponse* response) override;
  absl::Status Pull(const PullRequest& request, PullResponse* response) override;
  absl::Status Push(const PushRequest& request, PushResponse* response) override;
  absl::Status PullKeys(const PullKeysRequest& request, PullKeysResponse* response) override;
  absl::Status PushKeys(const PushKeysRequest& request, PushKeysResponse* response) override;
  absl::Status Save(const SaveRequest& request, SaveResponse* response) override;
  absl::Status Restore(const RestoreRequest& request, RestoreResponse* response) override;
  absl::Status Promote(const PromoteRequest& request, PromoteResponse* response) override;
  absl::Status AttachBackup(const AttachBackupRequest& request, AttachBackupResponse* response) override;
  absl::Status InstallReplica(const ReplicaStateRequest& request, ReplicaStateResponse* response) override;
  absl::Status GetStats(const PsStatsRequest& request, PsStatsResponse* response) override;

 private:
  PsServer* const server_;  // not owned
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_CLIENT_LOCAL_PS_CLIENT_H_
