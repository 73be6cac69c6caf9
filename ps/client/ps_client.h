// PsClient: how the chief and the workers talk to one ps task. Implementations: a gRPC client
// (ps/client/grpc_ps_client.h), an in-process one over a PsServer object (ps/client/local_ps_client.h) and test
// fakes. Callers hold the interface so the same logic runs over the network or in one process.
// Thread-safety: implementations must allow concurrent calls from many threads.
#ifndef PSTRAIN_PS_CLIENT_PS_CLIENT_H_
#define PSTRAIN_PS_CLIENT_PS_CLIENT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/wire/push_parts.h"
#include "proto/common.pb.h"
#include "proto/ps.pb.h"

namespace pstrain {

class PsClient {
 public:
  virtual ~PsClient() = default;

  // A name for messages, e.g. "ps:1 at localhost:2222".
  virtual std::string peer() const = 0;

  // Each call blocks until the ps answers. Errors: UNAVAILABLE / DEADLINE_EXCEEDED when the ps
  // cannot be reached (retryable); INVALID_ARGUMENT / NOT_FOUND / FAILED_PRECONDITION for requests
  // the ps rejects (not retryable), with the shard and the problem named in the message.
  virtual absl::Status Handshake(const HandshakeRequest& request, HandshakeResponse* response) = 0;
  virtual absl::Status CreateShards(const CreateShardsRequest& request, CreateShardsResponse* response) = 0;
  virtual absl::Status Pull(const PullRequest& request, PullResponse* response) = 0;
  virtual absl::Status Push(const PushRequest& request, PushResponse* response) = 0;
  // A push given as a header without bytes and the bytes apart (ps/transport/ps_transport.h's
  // PsTransport::PushParts): how a primary ps forwards an update from the buffers it arrived in.
  // This default copies them into one request; clients with a transport send them as they are.
  virtual absl::Status PushParts(const PushRequest& header, absl::Span<const absl::string_view> payload,
                                 PushResponse* response) {
    absl::StatusOr<PushRequest> request = AssemblePush(header, payload);
    if (!request.ok()) return request.status();
    return Push(*request, response);
  }
  // Rows of dynamic table shards by key (ps/store/ps_server.h). Clients without them (fakes) keep
  // these defaults: Unimplemented.
  virtual absl::Status PullKeys(const PullKeysRequest& request, PullKeysResponse* response) {
    return absl::UnimplementedError(peer() + " cannot pull dynamic table rows");
  }
  virtual absl::Status PushKeys(const PushKeysRequest& request, PushKeysResponse* response) {
    return absl::UnimplementedError(peer() + " cannot push dynamic table rows");
  }
  virtual absl::Status Save(const SaveRequest& request, SaveResponse* response) = 0;
  virtual absl::Status Restore(const RestoreRequest& request, RestoreResponse* response) = 0;
  virtual absl::Status GetStats(const PsStatsRequest& request, PsStatsResponse* response) = 0;
  // The chief lost ps task request.lost_ps() (ps_replicas 1): the ps promotes the backups it holds
  // of that ps's shards and stops forwarding to it. Implementations without it keep this default.
  virtual absl::Status Promote(const PromoteRequest& request, PromoteResponse* response) {
    return absl::UnimplementedError(peer() + " cannot promote backup shards");
  }
  // ps_replicas: the chief re-attaching a returned ps as backup (AttachBackup), and a primary
  // sending a backup a shard's state (InstallReplica). Defaults: Unimplemented.
  virtual absl::Status AttachBackup(const AttachBackupRequest& request, AttachBackupResponse* response) {
    return absl::UnimplementedError(peer() + " cannot attach backups");
  }
  virtual absl::Status InstallReplica(const ReplicaStateRequest& request, ReplicaStateResponse* response) {
    return absl::UnimplementedError(peer() + " cannot install shard states");
  }
  // Tells the ps that the job failed so it stops serving. Implementations without a process to
  // stop (in-process, fakes) keep this default: Unimplemented.
  virtual absl::Status Shutdown(const ShutdownRequest& request, ShutdownResponse* response) {
    return absl::UnimplementedError(peer() + " cannot be shut down remotely");
  }
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_CLIENT_PS_CLIENT_H_
