#include "worker/server/worker_grpc_server.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "common/rpc/grpc_credentials.h"
#include "common/rpc/grpc_server_metrics.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "worker/server/worker_service.h"

namespace pstrain {

absl::StatusOr<std::unique_ptr<WorkerGrpcServer>> WorkerGrpcServer::Start(Worker* worker,
                                                                          const std::string& listen_address,
                                                                          RemoteShutdownHandler on_shutdown,
                                                                          MetricsRegistry* metrics,
                                                                          const TlsConfig& tls, SecurityLog log) {
  grpc::EnableDefaultHealthCheckService(true);
  std::unique_ptr<WorkerGrpcServer> s(new WorkerGrpcServer);
  s->service_ = std::make_unique<WorkerServiceImpl>(worker, std::move(on_shutdown));
  grpc::ServerBuilder builder;
  // gRPC would share a taken port with SO_REUSEPORT and split the calls between two processes.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(listen_address, MakeServerCredentials(tls, std::move(log)), &s->port_);
  builder.RegisterService(s->service_.get());
  builder.SetMaxReceiveMessageSize(INT_MAX);
  builder.SetMaxSendMessageSize(INT_MAX);
  AddGrpcServerMetrics(&builder, metrics);
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", listen_address, ": the port is in use or the address is not local"));
  }
  if (grpc::HealthCheckServiceInterface* health = s->server_->GetHealthCheckService()) {
    health->SetServingStatus(true);
    health->SetServingStatus(pstrain::WorkerService::service_full_name(), true);
  }
  return s;
}

WorkerGrpcServer::~WorkerGrpcServer() { Shutdown(absl::Seconds(1)); }

void WorkerGrpcServer::Shutdown(absl::Duration grace) {
  if (stopped_) return;
  stopped_ = true;
  if (server_ == nullptr) {  // Start failed (the port is taken): nothing runs
    done_ = true;
    return;
  }
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) health->SetServingStatus(false);
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
  service_.reset();  // drains the work queue: queued calls finish on their (cancelled) reactors
  done_ = true;
}

}  // namespace pstrain
