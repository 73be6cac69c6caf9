#include "chief/tool/health_command.h"

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/config/cluster_spec.h"
#include "common/config/command_line.h"
#include "common/platform/exit_codes.h"
#include "common/rpc/grpc_credentials.h"
#include "common/rpc/grpc_status.h"
#include "grpcpp/grpcpp.h"
#include "proto/health.grpc.pb.h"

namespace pstrain {
namespace {

const std::vector<FlagDef>& HealthFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"service", "", "ask about one service (e.g. pstrain.PsService) instead of the whole server"},
      {"timeout_secs", "5", "give up after this many seconds"},
      {"tls_dir", "", "a cluster with TLS: the directory pstrain certs wrote (also PSTRAIN_TLS_DIR)"},
      {"task", "", "with --tls_dir: whose certificate to present, e.g. ps:0 (a pod's own task)"},
      {"tls_ca", "", "the cluster CA (overrides --tls_dir's; also PSTRAIN_TLS_CA)"},
      {"tls_cert", "", "the certificate to present (also PSTRAIN_TLS_CERT)"},
      {"tls_key", "", "its key (also PSTRAIN_TLS_KEY)"},
  };
  return *flags;
}

}  // namespace

absl::StatusOr<std::string> CheckHealth(const std::string& address, const std::string& service, double timeout_secs,
                                        const TlsConfig& tls) {
  auto channel = grpc::CreateChannel(address, MakeChannelCredentials(tls));
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(timeout_secs * 1000)));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status s = stub->Check(&context, request, &response);
  if (!s.ok()) {
    return FromGrpcStatus(s, absl::StrCat("the health check of ", address, " failed"));
  }
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

int HealthMain(Env* env, int argc, char** argv) {
  const std::string summary =
      "Asks a pstrain task (chief, worker or ps) for its gRPC health (grpc.health.v1). Exit 0 when SERVING.\n"
      "  pstrain health localhost:2222";
  auto cl = CommandLine::Parse("pstrain health", argc, argv, 2, HealthFlags());
  if (!cl.ok()) {
    std::cerr << "pstrain health: " << cl.status().message() << "\n";
    return kExitBadConfiguration;
  }
  if (cl->help()) {
    std::cout << "usage: pstrain health HOST:PORT [flags]\n" << FlagUsage("pstrain health", summary, HealthFlags());
    return kExitOk;
  }
  absl::StatusOr<double> timeout = cl->GetDouble("timeout_secs");
  absl::Status valid = cl->positional().size() == 1
                           ? ValidateAddress(cl->positional()[0], "the address")
                           : absl::InvalidArgumentError("give one HOST:PORT, e.g. pstrain health localhost:2222");
  if (!timeout.ok() || !valid.ok() || *timeout <= 0) {
    std::cerr << "pstrain health: "
              << (!valid.ok() ? valid.message() : "--timeout_secs must be a positive number of seconds") << "\n";
    return kExitBadConfiguration;
  }
  const std::string address = cl->positional()[0];
  absl::StatusOr<TlsConfig> tls =
      LoadTlsConfig(env,
                    TlsFilesWithEnvironment(
                        {cl->Get("tls_dir"), cl->Get("tls_ca"), cl->Get("tls_cert"), cl->Get("tls_key")}, std::getenv),
                    cl->Get("task"));
  if (!tls.ok()) {
    std::cerr << "pstrain health: " << tls.status().message() << "\n";
    return kExitBadConfiguration;
  }
  absl::StatusOr<std::string> status = CheckHealth(address, cl->Get("service"), *timeout, *tls);
  if (!status.ok()) {
    std::cerr << "pstrain health: " << status.status().message() << "\n";
    return kExitRuntimeFailure;
  }
  if (*status != "SERVING") {
    std::cerr << "pstrain health: " << address << " is " << *status << "\n";
    return kExitRuntimeFailure;
  }
  std::cout << address << ": SERVING\n";
  return kExitOk;
}

}  // namespace pstrain
