// Serves a Worker over gRPC (callback API) with the standard health service on a listen address.
// Used by pstrain-worker and by tests that need a real worker server in process.
// Thread-safety: Start/Shutdown from one thread; the Worker is not owned and must outlive it.
#ifndef PSTRAIN_WORKER_SERVER_WORKER_GRPC_SERVER_H_
#define PSTRAIN_WORKER_SERVER_WORKER_GRPC_SERVER_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/metrics/metrics_registry.h"
#include "common/platform/stop_signals.h"
#include "common/security/call_policy.h"
#include "common/security/tls_config.h"
#include "worker/step/worker.h"

namespace grpc {
class Server;
}

namespace pstrain {

class WorkerServiceImpl;

class WorkerGrpcServer {
 public:
  // Listens on `listen_address` ("0.0.0.0:2223"; port 0 picks a free one). Unavailable naming
  // the address when it cannot bind.
  // `on_shutdown` answers the chief's Shutdown calls (empty: Unimplemented).
  // `metrics` (not owned; may be null) gets the gRPC metrics by method. With `tls` enabled the
  // server is mutual TLS and checks every call against the call policy, logging refusals to `log`.
  static absl::StatusOr<std::unique_ptr<WorkerGrpcServer>> Start(Worker* worker, const std::string& listen_address,
                                                                 RemoteShutdownHandler on_shutdown = nullptr,
                                                                 MetricsRegistry* metrics = nullptr,
                                                                 const TlsConfig& tls = TlsConfig(),
                                                                 SecurityLog log = nullptr);
  // Runs Shutdown(absl::Seconds(1)).
  ~WorkerGrpcServer();

  int port() const { return port_; }
  // True once Shutdown has returned (safe to poll from another thread).
  bool stopped() const { return done_; }
  // Marks the health service not serving, then stops gRPC, cancelling calls still running after
  // `grace`, and waits for the service's queued work to finish.
  void Shutdown(absl::Duration grace);

 private:
  WorkerGrpcServer() = default;

  std::unique_ptr<WorkerServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool stopped_ = false;
  std::atomic<bool> done_{false};
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_SERVER_WORKER_GRPC_SERVER_H_
