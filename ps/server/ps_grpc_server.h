// Serves a PsServer on one listen address: PsService (gRPC callback API) with the standard health
// service and message limits at the protobuf maximum, and the tensor channel for pulls and pushes
// (SharedPortListener tells their connections apart). With TLS both are mutual TLS against the
// cluster CA and every call is checked against the call policy (common/security/call_policy.h).
// Used by pstrain-ps, and by tests and benchmarks that need a real server in process.
// Thread-safety: Start/Shutdown from one thread; the PsServer is not owned and must outlive it.
#ifndef PSTRAIN_PS_SERVER_PS_GRPC_SERVER_H_
#define PSTRAIN_PS_SERVER_PS_GRPC_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/metrics/metrics_registry.h"
#include "common/platform/stop_signals.h"
#include "common/security/call_policy.h"
#include "common/security/tls_config.h"
#include "ps/store/ps_server.h"
#include "ps/transport/shared_port_listener.h"
#include "ps/transport/tensor_channel_server.h"

namespace grpc {
class Server;
namespace experimental {
class ExternalConnectionAcceptor;
}
}  // namespace grpc

namespace pstrain {

class PsServiceImpl;

class PsGrpcServer {
 public:
  struct Options {
    TlsConfig tls;                         // disabled: plaintext
    RemoteShutdownHandler on_shutdown;     // answers the chief's Shutdown calls (empty: Unimplemented)
    MetricsRegistry* metrics = nullptr;    // gets the gRPC metrics by method (not owned; may be null)
    SecurityLog log;                       // refused calls and connections; empty: std::cerr
    // The tensor channel's clock (not owned). nullptr: Env::Default(), resolved here once for the
    // listener and the channel, so the tests and benchmarks that serve on real time need not name it.
    Env* env = nullptr;
    SharedPortListener::Options listener;  // connection cap, preface timeout, io threads
    TensorChannelServer::Options channel;  // frame timeout, budgets (tls, env and log come from above)
  };

  // Listens on `listen_address` ("0.0.0.0:2222"; port 0 picks a free one). Unavailable naming the
  // address when it cannot bind (port in use, bad host); InvalidArgument for TLS material OpenSSL
  // refuses.
  static absl::StatusOr<std::unique_ptr<PsGrpcServer>> Start(PsServer* ps, const std::string& listen_address,
                                                             Options options);
  // Plaintext, default bounds (tests, benchmarks).
  static absl::StatusOr<std::unique_ptr<PsGrpcServer>> Start(PsServer* ps, const std::string& listen_address);
  // Runs Shutdown(absl::Seconds(1)).
  ~PsGrpcServer();

  int port() const { return port_; }
  // The listener, for its counts (connections, threads).
  const SharedPortListener& listener() const { return *listener_; }
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

#endif  // PSTRAIN_PS_SERVER_PS_GRPC_SERVER_H_
