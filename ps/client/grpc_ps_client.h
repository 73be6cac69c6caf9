// GrpcPsClient: the PsClient of a remote ps task. Control calls (handshake, create, save, restore,
// stats, shutdown) are blocking unary gRPC calls on one channel (message limits lifted to the
// protobuf maximum); pulls and pushes go over the transport the task's configuration names
// (ps/transport/ps_transport.h): the tensor channel on the same port, or unary gRPC on the same
// channel. With TLS in the configuration both are mutual TLS against the cluster CA. Every call
// carries a deadline; a ps that cannot be reached gives UNAVAILABLE, a hung one DEADLINE_EXCEEDED,
// both naming the peer.
// Thread-safety: thread-safe (gRPC channels and stubs are, and so are the transports).
#ifndef PSTRAIN_PS_CLIENT_GRPC_PS_CLIENT_H_
#define PSTRAIN_PS_CLIENT_GRPC_PS_CLIENT_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "proto/ps.grpc.pb.h"
#include "ps/client/ps_client.h"
#include "ps/transport/ps_transport.h"

namespace pstrain {

class GrpcPsClient : public PsClient {
 public:
  // `address` "host:port"; `peer_name` e.g. "ps:1" (messages say "ps:1 at host:port"); `deadline`
  // bounds each call, and must exceed the sync timeout for sync pushes and pulls.
  GrpcPsClient(const std::string& address, const std::string& peer_name, absl::Duration deadline,
               const TransportConfig& config);

  std::string peer() const override { return peer_; }
  absl::Status Handshake(const HandshakeRequest& request, HandshakeResponse* response) override;
  absl::Status CreateShards(const CreateShardsRequest& request, CreateShardsResponse* response) override;
  absl::Status Pull(const PullRequest& request, PullResponse* response) override;
  absl::Status Push(const PushRequest& request, PushResponse* response) override;
  absl::Status PushParts(const PushRequest& header, absl::Span<const absl::string_view> payload,
                         PushResponse* response) override;
  // Unary gRPC calls (never the tensor channel).
  absl::Status PullKeys(const PullKeysRequest& request, PullKeysResponse* response) override;
  absl::Status PushKeys(const PushKeysRequest& request, PushKeysResponse* response) override;
  absl::Status Save(const SaveRequest& request, SaveResponse* response) override;
  absl::Status Restore(const RestoreRequest& request, RestoreResponse* response) override;
  absl::Status GetStats(const PsStatsRequest& request, PsStatsResponse* response) override;
  absl::Status Promote(const PromoteRequest& request, PromoteResponse* response) override;
  absl::Status AttachBackup(const AttachBackupRequest& request, AttachBackupResponse* response) override;
  absl::Status InstallReplica(const ReplicaStateRequest& request, ReplicaStateResponse* response) override;
  // Waits at most 3 s (less when the client's deadline is shorter): a failing job must not hang.
  absl::Status Shutdown(const ShutdownRequest& request, ShutdownResponse* response) override;

 private:
  // One blocking unary call of `method` with the client's deadline, its status naming the peer.
  template <typename Request, typename Response>
  absl::Status Unary(grpc::Status (PsService::Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                     const Request& request, Response* response, absl::Duration deadline);

  const std::string peer_;
  const absl::Duration deadline_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<PsService::Stub> stub_;
  std::unique_ptr<PsTransport> transport_;
};

// A GrpcPsClient with a 5-minute per-call deadline.
std::unique_ptr<PsClient> NewGrpcPsClient(const std::string& address, const std::string& peer_name,
                                          const TransportConfig& config);

}  // namespace pstrain

#endif  // PSTRAIN_PS_CLIENT_GRPC_PS_CLIENT_H_
