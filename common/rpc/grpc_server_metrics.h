// Prometheus metrics of a gRPC server by method, recorded by a server interceptor so that no
// service handler changes: pstrain_grpc_server_handling_seconds (histogram: from the call's start
// to its status) and pstrain_grpc_server_handled_total (counter by status code), labelled
// grpc_service ("pstrain.PsService") and grpc_method ("Pull"). Streaming calls count once, for
// the whole stream.
// Thread-safety: the interceptors run on gRPC's threads and only update the registry.
#ifndef PSTRAIN_COMMON_RPC_GRPC_SERVER_METRICS_H_
#define PSTRAIN_COMMON_RPC_GRPC_SERVER_METRICS_H_

#include "common/metrics/metrics_registry.h"

namespace grpc {
class ServerBuilder;
}

namespace pstrain {

// Installs the interceptor on `builder` (before BuildAndStart). `metrics` is not owned and must
// outlive the server; nullptr installs nothing.
void AddGrpcServerMetrics(grpc::ServerBuilder* builder, MetricsRegistry* metrics);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_RPC_GRPC_SERVER_METRICS_H_
