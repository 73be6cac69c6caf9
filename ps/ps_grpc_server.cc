#include "ps/ps_grpc_server.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "common/grpc_server_metrics.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "ps/grpc_tuning.h"
#include "ps/ps_service.h"
#include "ps/shared_port_listener.h"
#include "ps/tensor_channel_server.h"

namespace pstrain {

absl::StatusOr<std::unique_ptr<PsGrpcServer>> PsGrpcServer::Start(PsServer* ps, const std::string& listen_address,
                                                                   RemoteShutdownHandler on_shutdown,
                                                                   MetricsRegistry* metrics) {
  grpc::EnableDefaultHealthCheckService(true);
  std::unique_ptr<PsGrpcServer> s(new PsGrpcServer);
  s->ps_ = ps;
  absl::StatusOr<std::unique_ptr<SharedPortListener>> listener = SharedPortListener::Bind(listen_address);
  if (!listener.ok()) return listener.status();
  s->listener_ = std::move(*listener);
  s->port_ = s->listener_->port();
  s->service_ = std::make_unique<PsServiceImpl>(ps, std::move(on_shutdown));
  s->tensor_channel_ = std::make_unique<TensorChannelServer>(ps);
  grpc::ServerBuilder builder;
  // gRPC gets its connections from the listener, which keeps the tensor channel's for itself.
  s->grpc_acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, grpc::InsecureServerCredentials());
  builder.RegisterService(s->service_.get());
  ConfigurePsServerBuilder(&builder);
  AddGrpcServerMetrics(&builder, metrics);
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr) {
    return absl::InternalError(absl::StrCat("cannot start the gRPC server for ", listen_address));
  }
  if (grpc::HealthCheckServiceInterface* health = s->server_->GetHealthCheckService()) {
    health->SetServingStatus(true);
    health->SetServingStatus(PsService::service_full_name(), true);
  }
  grpc::experimental::ExternalConnectionAcceptor* acceptor = s->grpc_acceptor_.get();
  TensorChannelServer* channel = s->tensor_channel_.get();
  SharedPortListener::Handlers handlers;
  handlers.grpc = [acceptor](int listener_fd, int fd, std::string preface) {
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
    p.listener_fd = listener_fd;
    p.fd = fd;
    grpc::Slice bytes(preface.data(), preface.size());
    p.read_buffer = grpc::ByteBuffer(&bytes, 1);
    acceptor->HandleNewConnection(&p);
  };
  handlers.tensor_channel = [channel](int fd) { channel->Serve(fd); };
  s->listener_->Start(std::move(handlers));
  return s;
}

PsGrpcServer::~PsGrpcServer() { Shutdown(absl::Seconds(1)); }

void PsGrpcServer::Shutdown(absl::Duration grace) {
  if (stopped_) return;
  stopped_ = true;
  if (server_ == nullptr) {  // Start failed before serving: nothing was parked
    if (listener_ != nullptr) listener_->Shutdown();
    return;
  }
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) health->SetServingStatus(false);
  ps_->Shutdown();
  listener_->Shutdown();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
}

}  // namespace pstrain
