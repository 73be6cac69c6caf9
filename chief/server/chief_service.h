// ChiefServiceImpl: the chief's gRPC status service (proto/chief.proto), a thin adapter over a
// status callback, served with the callback API. Handlers answer at once (no blocking).
// Thread-safety: thread-safe; the callback must be safe to call from gRPC threads.
#ifndef PSTRAIN_CHIEF_SERVER_CHIEF_SERVICE_H_
#define PSTRAIN_CHIEF_SERVER_CHIEF_SERVICE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics/metrics_registry.h"
#include "common/security/call_policy.h"
#include "common/security/tls_config.h"
#include "grpcpp/grpcpp.h"
#include "proto/chief.grpc.pb.h"

namespace pstrain {

class ChiefServiceImpl : public ChiefService::CallbackService {
 public:
  // `task` names this process in handshakes ("chief:0").
  ChiefServiceImpl(std::string task, std::function<ChiefStatusResponse()> status)
      : task_(std::move(task)), status_(std::move(status)) {}

  grpc::ServerUnaryReactor* Handshake(grpc::CallbackServerContext* context, const HandshakeRequest* request,
                                      HandshakeResponse* response) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context, const ChiefStatusRequest* request,
                                      ChiefStatusResponse* response) override;

 private:
  const std::string task_;
  const std::function<ChiefStatusResponse()> status_;
};

// Starts a server listening on `listen` ("0.0.0.0:2222", "127.0.0.1:0") with `service` and gRPC's
// standard health service (reporting SERVING). `service` is not owned and must outlive the
// server; the port bound goes to `bound_port` when not null (port 0 picks a free one).
// Unavailable naming the address when it cannot be bound.
// `metrics` (not owned; may be null) gets the server's gRPC metrics by method. With `tls` enabled
// the server is mutual TLS and checks every call against the call policy, logging refusals to `log`.
absl::StatusOr<std::unique_ptr<grpc::Server>> StartChiefServer(const std::string& listen,
                                                               ChiefServiceImpl* service, int* bound_port = nullptr,
                                                               MetricsRegistry* metrics = nullptr,
                                                               const TlsConfig& tls = TlsConfig(),
                                                               SecurityLog log = nullptr);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_SERVER_CHIEF_SERVICE_H_
