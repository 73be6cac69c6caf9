// The gRPC edge of a ps task: PsService handlers (callback API) that unpack a request, call the
// PsServer and finish the reactor with its status. Pull and Push park the reactor until the
// PsServer's completion runs; no handler blocks. Who may call what is checked before any handler
// runs (common/rpc/grpc_credentials.h).
// Thread-safety: thread-safe; the PsServer is not owned and must outlive the service.
#ifndef PSTRAIN_PS_SERVER_PS_SERVICE_H_
#define PSTRAIN_PS_SERVER_PS_SERVICE_H_

#include "common/platform/stop_signals.h"
#include "proto/ps.grpc.pb.h"
#include "ps/store/ps_server.h"

namespace pstrain {

class PsServiceImpl final : public PsService::CallbackService {
 public:
  // `on_shutdown` answers the chief's Shutdown calls; empty: they fail with Unimplemented.
  explicit PsServiceImpl(PsServer* server, RemoteShutdownHandler on_shutdown = nullptr)
      : server_(server), on_shutdown_(std::move(on_shutdown)) {}

  grpc::ServerUnaryReactor* Handshake(grpc::CallbackServerContext* context, const HandshakeRequest* request,
                                      HandshakeResponse* response) override;
  grpc::ServerUnaryReactor* CreateShards(grpc::CallbackServerContext* context, const CreateShardsRequest* request,
                                         CreateShardsResponse* response) override;
  grpc::ServerUnaryReactor* Pull(grpc::CallbackServerContext* context, const PullRequest* request,
                                 PullResponse* response) override;
  grpc::ServerUnaryReactor* Push(grpc::CallbackServerContext* context, const PushRequest* request,
                                 PushResponse* response) override;
  grpc::ServerUnaryReactor* PullKeys(grpc::CallbackServerContext* context, const PullKeysRequest* request,
                                     PullKeysResponse* response) override;
  grpc::ServerUnaryReactor* PushKeys(grpc::CallbackServerContext* context, const PushKeysRequest* request,
                                     PushKeysResponse* response) override;
  grpc::ServerUnaryReactor* Save(grpc::CallbackServerContext* context, const SaveRequest* request,
                                 SaveResponse* response) override;
  grpc::ServerUnaryReactor* Restore(grpc::CallbackServerContext* context, const RestoreRequest* request,
                                    RestoreResponse* response) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context, const PsStatsRequest* request,
                                     PsStatsResponse* response) override;
  grpc::ServerUnaryReactor* Promote(grpc::CallbackServerContext* context, const PromoteRequest* request,
                                    PromoteResponse* response) override;
  grpc::ServerUnaryReactor* AttachBackup(grpc::CallbackServerContext* context, const AttachBackupRequest* request,
                                         AttachBackupResponse* response) override;
  grpc::ServerUnaryReactor* InstallReplica(grpc::CallbackServerContext* context, const ReplicaStateRequest* request,
                                           ReplicaStateResponse* response) override;
  grpc::ServerUnaryReactor* Shutdown(grpc::CallbackServerContext* context, const ShutdownRequest* request,
                                     ShutdownResponse* response) override;

 private:
  PsServer* const server_;  // not owned
  const RemoteShutdownHandler on_shutdown_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_SERVER_PS_SERVICE_H_
