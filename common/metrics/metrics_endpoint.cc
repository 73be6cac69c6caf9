#include "common/metrics/metrics_endpoint.h"

#include <iostream>

#include "absl/strings/str_cat.h"

namespace pstrain {

std::string ListenHost(const std::string& listen_address) {
  const size_t colon = listen_address.rfind(':');
  std::string host = colon == std::string::npos ? listen_address : listen_address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

absl::StatusOr<std::unique_ptr<HttpMetricsServer>> ServeMetrics(MetricsRegistry* registry, const std::string& host,
                                                                int port, const std::string& who) {
  if (port == 0) return std::unique_ptr<HttpMetricsServer>();
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics_port=", port, " is not a port (1..65535, or 0 for off)"));
  }
  absl::StatusOr<std::unique_ptr<HttpMetricsServer>> server =
      HttpMetricsServer::Start(host, port, [registry] { return registry->Render(); });
  if (!server.ok()) return server.status();
  const std::string shown = host.find(':') != std::string::npos ? absl::StrCat("[", host, "]") : host;
  std::cerr << who << ": metrics on http://" << shown << ":" << (*server)->port() << "/metrics" << std::endl;
  return server;
}

}  // namespace pstrain
