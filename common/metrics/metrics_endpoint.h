// What every task's main does with its --metrics_port: serve the process's MetricsRegistry at
// http://<host of the task's listen address>:<port>/metrics (common/metrics/http_metrics_server.h).
// Thread-safety: call from main; the returned server is thread-safe.
#ifndef PSTRAIN_COMMON_METRICS_METRICS_ENDPOINT_H_
#define PSTRAIN_COMMON_METRICS_METRICS_ENDPOINT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics/http_metrics_server.h"
#include "common/metrics/metrics_registry.h"

namespace pstrain {

// The host of a listen address: "0.0.0.0:2222" -> "0.0.0.0", "[::]:2222" -> "::", "host:1" -> "host".
std::string ListenHost(const std::string& listen_address);

// Serves `registry` (not owned; must outlive the server) on host:port when port > 0 and writes
// "<who>: metrics on http://host:port/metrics" to stderr; nullptr when port == 0.
// InvalidArgument for a port outside 0..65535; Unavailable when it cannot listen.
absl::StatusOr<std::unique_ptr<HttpMetricsServer>> ServeMetrics(MetricsRegistry* registry, const std::string& host,
                                                                int port, const std::string& who);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_METRICS_METRICS_ENDPOINT_H_
