// WorkerServiceImpl: the gRPC edge of a Worker (callback API). Each handler unpacks the call, runs the
// Worker method on a WorkQueue thread (the worker logic blocks on the ps and on compute, which a
// reaction thread must never do) and Finish()es the parked reactor with the mapped status.
// Thread-safety: gRPC calls handlers concurrently; the Worker serialises what must be.
#ifndef PSTRAIN_WORKER_SERVER_WORKER_SERVICE_H_
#define PSTRAIN_WORKER_SERVER_WORKER_SERVICE_H_

#include "common/platform/stop_signals.h"
#include "proto/worker.grpc.pb.h"
#include "worker/server/work_queue.h"
#include "worker/step/worker.h"

namespace pstrain {

class WorkerServiceImpl final : public pstrain::WorkerService::CallbackService {
 public:
  // `worker` is not owned and must outlive the service (and the server it is registered with).
  // `on_shutdown` answers the chief's Shutdown calls at once, off the work queue (which may be busy
  // with a step); empty: they fail with Unimplemented.
  explicit WorkerServiceImpl(Worker* worker, RemoteShutdownHandler on_shutdown = nullptr)
      : worker_(worker), on_shutdown_(std::move(on_shutdown)), queue_(kCallThreads) {}

  grpc::ServerUnaryReactor* Handshake(grpc::CallbackServerContext* ctx, const HandshakeRequest* request,
                                      HandshakeResponse* response) override;
  grpc::ServerUnaryReactor* Configure(grpc::CallbackServerContext* ctx, const ConfigureRequest* request,
                                      ConfigureResponse* response) override;
  grpc::ServerUnaryReactor* Reassign(grpc::CallbackServerContext* ctx, const ReassignRequest* request,
                                     ReassignResponse* response) override;
  grpc::ServerUnaryReactor* RunSteps(grpc::CallbackServerContext* ctx, const RunStepsRequest* request,
                                     RunStepsResponse* response) override;
  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* ctx, const EvaluateRequest* request,
                                     EvaluateResponse* response) override;
  grpc::ServerUnaryReactor* Shutdown(grpc::CallbackServerContext* ctx, const ShutdownRequest* request,
                                     ShutdownResponse* response) override;

 private:
  // Calls that may block at once: this worker's own closure, closures of lost workers' data parts
  // re-run here (sync mode: all parts of a step must run together), and a Configure or Evaluate.
  static constexpr int kCallThreads = 6;

  Worker* worker_;  // not owned
  const RemoteShutdownHandler on_shutdown_;
  WorkQueue queue_;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_SERVER_WORKER_SERVICE_H_
