#include "ps/server/ps_grpc_server.h"

#include "absl/strings/str_cat.h"
#include "common/platform/env.h"
#include "common/rpc/grpc_credentials.h"
#include "common/rpc/grpc_server_metrics.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "ps/server/ps_service.h"
#include "ps/transport/grpc_tuning.h"

namespace pstrain {

absl::StatusOr<std::unique_ptr<PsGrpcServer>> PsGrpcServer::Start(PsServer* ps, const std::string& listen_address,
                                                                  Options options) {
  grpc::EnableDefaultHealthCheckService(true);
  std::unique_ptr<PsGrpcServer> s(new PsGrpcServer);
  s->ps_ = ps;
  absl::StatusOr<std::unique_ptr<SharedPortListener>> listener = SharedPortListener::Bind(listen_address);
  if (!listener.ok()) return listener.status();
  s->listener_ = std::move(*listener);
  s->port_ = s->listener_->port();
  TensorChannelServer::Options channel = options.channel;
  channel.tls = options.tls;
  Env* env = options.env != nullptr ? options.env : Env::Default();
  channel.env = env;
  channel.log = options.log;
  absl::StatusOr<std::unique_ptr<TensorChannelServer>> tensor_channel = TensorChannelServer::Create(ps, channel);
  if (!tensor_channel.ok()) return tensor_channel.status();
  s->tensor_channel_ = *std::move(tensor_channel);
  s->service_ = std::make_unique<PsServiceImpl>(ps, std::move(options.on_shutdown));
  grpc::ServerBuilder builder;
  // gRPC gets its connections from the listener, which keeps the tensor channel's for itself.
  s->grpc_acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
      MakeServerCredentials(options.tls, options.log));
  builder.RegisterService(s->service_.get());
  ConfigurePsServerBuilder(&builder);
  AddGrpcServerMetrics(&builder, options.metrics);
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr) {
    return absl::InternalError(absl::StrCat("cannot start the gRPC server for ", listen_address));
  }
  if (grpc::HealthCheckServiceInterface* health = s->server_->GetHealthCheckService()) {
    health->SetServingStatus(true);
    health->SetServingStatus(PsService::service_full_name(), true);
  }
  grpc::experimental::ExternalConnectionAcceptor* acceptor = s->grpc_acceptor_.get();
  SharedPortListener::Options listen = options.listener;
  listen.env = env;
  listen.log = options.log;
  s->listener_->Start(
      s->tensor_channel_.get(),
      [acceptor](int listener_fd, int fd, std::string first_bytes) {
        grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
        p.listener_fd = listener_fd;
        p.fd = fd;
        grpc::Slice bytes(first_bytes.data(), first_bytes.size());
        p.read_buffer = grpc::ByteBuffer(&bytes, 1);
        acceptor->HandleNewConnection(&p);
      },
      listen);
  return s;
}

absl::StatusOr<std::unique_ptr<PsGrpcServer>> PsGrpcServer::Start(PsServer* ps, const std::string& listen_address) {
  return Start(ps, listen_address, Options());
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
