// Serves a PsServer over gRPC (callback API) with the standard health service, message limits
// raised to the protobuf maximum, and the tensor channel for large pulls and pushes, both on one
// listen address (SharedPortListener tells their connections apart). Used by pstrain-ps, and by tests and
// benchmarks that need a real server in process.
// Thread-safety: Start/Shutdown from one thread; the PsServer is not owned and must outlive it.
#ifndef PSTRAIN_PS_PS_GRPC_SERVER_H_
#define PSTRAIN_PS_PS_GRPC_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/metrics_registry.h"
#include "common/stop_signals.h"
#include "ps/ps_server.h"

namespace grpc {
class Server;
namespace experimental {
class ExternalConnectionAcceptor;
}
}  // namespace grpc

namespace pstrain {

class PsServiceImpl;
class SharedPortListener;
class TensorChannelServer;

class PsGrpcServer {
 public:
  // Listens on `listen_address` ("0.0.0.0:2222"; port 0 picks a free one). Unavailable naming the
  // address when it cannot bind (port in use, bad host).
  // `on_shutdown` answers the chief's Shutdown calls (empty: Unimplemented).
  // `metrics` (not owned; may be null) gets the gRPC metrics by method.
  static absl::StatusOr<std::unique_ptr<PsGrpcServer>> Start(PsServer* ps, const std::string& listen_address,
                                                             RemoteShutdownHandler on_shutdown = nullptr,
                                                             MetricsRegistry* metrics = nullptr);
  // Runs Shutdown(absl::Seconds(1)).
  ~PsGrpcServer();

  int port() const { return port_; }
  // Fails the ps's parked calls, ends the tensor-channel connections, then stops gRPC, cancelling
  // calls still running after `grace`.
  void Shutdown(absl::Duration grace);

 private:
  PsGrpcServer() = default;

  PsServer* ps_ = nullptr;  // not owned
  std::unique_ptr<PsServiceImpl> service_;
  std::unique_ptr<TensorChannelServer> tensor_channel_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> grpc_acceptor_;
  std::unique_ptr<SharedPortListener> listener_;  // last: its threads use the members above
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_PS_GRPC_SERVER_H_
