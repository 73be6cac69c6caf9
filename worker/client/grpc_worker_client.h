// The gRPC implementation of WorkerClient: one channel to one worker task, a deadline per call,
// grpc::Status mapped back to absl::Status with the worker named in the message.
// Thread-safety: safe for concurrent calls from many threads (gRPC stubs are).
#ifndef PSTRAIN_WORKER_CLIENT_GRPC_WORKER_CLIENT_H_
#define PSTRAIN_WORKER_CLIENT_GRPC_WORKER_CLIENT_H_

#include <memory>
#include <string>

#include "common/security/tls_config.h"
#include "worker/client/worker_client.h"

namespace pstrain {

// `address` is "host:port"; `peer_name` names the task in messages (e.g. "worker:1 at h:2223").
// Connecting is lazy: a dead worker shows up as UNAVAILABLE on the first call. With `tls` enabled
// the channel is mutual TLS against the cluster CA.
std::unique_ptr<WorkerClient> NewGrpcWorkerClient(const std::string& address, const std::string& peer_name,
                                                  const TlsConfig& tls);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CLIENT_GRPC_WORKER_CLIENT_H_
