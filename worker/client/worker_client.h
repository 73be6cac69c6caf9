// WorkerClient: how the chief talks to one worker task. Implementations: a gRPC client
// (worker/client/grpc_worker_client.h), an in-process one over a Worker object and test fakes.
// Thread-safety: implementations must allow concurrent calls from many threads.
#ifndef PSTRAIN_WORKER_CLIENT_WORKER_CLIENT_H_
#define PSTRAIN_WORKER_CLIENT_WORKER_CLIENT_H_

#include <string>

#include "absl/status/status.h"
#include "proto/common.pb.h"
#include "proto/worker.pb.h"

namespace pstrain {

class WorkerClient {
 public:
  virtual ~WorkerClient() = default;

  // A name for messages, e.g. "worker:0 at localhost:2223".
  virtual std::string peer() const = 0;

  // Each call blocks until the worker answers or `timeout_ms` (> 0) passes. UNAVAILABLE /
  // DEADLINE_EXCEEDED mean the worker is gone or late (the chief re-queues the closure);
  // other codes come from the worker's logic (bad job spec, shape mismatch: not retryable).
  virtual absl::Status Handshake(const HandshakeRequest& request, HandshakeResponse* response,
                                 int64_t timeout_ms) = 0;
  virtual absl::Status Configure(const ConfigureRequest& request, ConfigureResponse* response,
                                 int64_t timeout_ms) = 0;
  // Default for implementations without it (fakes): Unimplemented.
  virtual absl::Status Reassign(const ReassignRequest& request, ReassignResponse* response, int64_t timeout_ms) {
    return absl::UnimplementedError(peer() + " cannot be reassigned");
  }
  virtual absl::Status RunSteps(const RunStepsRequest& request, RunStepsResponse* response, int64_t timeout_ms) = 0;
  virtual absl::Status Evaluate(const EvaluateRequest& request, EvaluateResponse* response, int64_t timeout_ms) = 0;
  // Tells the worker that the job failed so it stops serving. Implementations without a process to
  // stop (in-process, fakes) keep this default: Unimplemented.
  virtual absl::Status Shutdown(const ShutdownRequest& request, ShutdownResponse* response, int64_t timeout_ms) {
    return absl::UnimplementedError(peer() + " cannot be shut down remotely");
  }
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CLIENT_WORKER_CLIENT_H_
