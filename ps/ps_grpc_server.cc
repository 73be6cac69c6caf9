#include "ps/ps_grpc_server.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "ps/grpc_tuning.h"
#include "ps/ps_service.h"

namespace pstrain {

absl::StatusOr<std::unique_ptr<PsGrpcServer>> PsGrpcServer::Start(PsServer* ps, const std::string& listen_address,
                                                                   RemoteShutdownHandler on_shutdown) {
  grpc::EnableDefaultHealthCheckService(true);
  std::unique_ptr<PsGrpcServer> s(new PsGrpcServer);
  s->ps_ = ps;
  s->service_ = std::make_unique<PsServiceImpl>(ps, std::move(on_shutdown));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen_address, grpc::InsecureServerCredentials(), &s->port_);
  builder.RegisterService(s->service_.get());
  ConfigurePsServerBuilder(&builder);
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", listen_address, ": the port is in use or the address is not local"));
  }
  if (grpc::HealthCheckServiceInterface* health = s->server_->GetHealthCheckService()) {
    health->SetServingStatus(true);
    health->SetServingStatus(PsService::service_full_name(), true);
  }
  return s;
}

PsGrpcServer::~PsGrpcServer() { Shutdown(absl::Seconds(1)); }

void PsGrpcServer::Shutdown(absl::Duration grace) {
  if (stopped_) return;
  stopped_ = true;
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) health->SetServingStatus(false);
  ps_->Shutdown();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
}

}  // namespace pstrain
