#include "chief/server/chief_service.h"

#include "absl/strings/str_cat.h"
#include "common/rpc/grpc_credentials.h"
#include "common/rpc/grpc_server_metrics.h"
#include "common/wire/protocol_version.h"
#include "grpcpp/health_check_service_interface.h"

namespace pstrain {

grpc::ServerUnaryReactor* ChiefServiceImpl::Handshake(grpc::CallbackServerContext* context,
                                                      const HandshakeRequest* request, HandshakeResponse* response) {
  response->set_protocol_version(kProtocolVersion);
  response->set_task(task_);
  response->set_build("pstrain");
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* ChiefServiceImpl::GetStatus(grpc::CallbackServerContext* context,
                                                      const ChiefStatusRequest* request,
                                                      ChiefStatusResponse* response) {
  *response = status_();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

absl::StatusOr<std::unique_ptr<grpc::Server>> StartChiefServer(const std::string& listen,
                                                               ChiefServiceImpl* service, int* bound_port,
                                                               MetricsRegistry* metrics, const TlsConfig& tls,
                                                               SecurityLog log) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  // gRPC would share a taken port with SO_REUSEPORT and split the calls between two processes.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(listen, MakeServerCredentials(tls, std::move(log)), &port);
  builder.RegisterService(service);
  AddGrpcServerMetrics(&builder, metrics);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve the chief status service on ", listen,
                                               " (is the port already in use, or the host not an address of this "
                                               "machine?)"));
  }
  server->GetHealthCheckService()->SetServingStatus(true);
  if (bound_port != nullptr) *bound_port = port;
  return server;
}

}  // namespace pstrain
