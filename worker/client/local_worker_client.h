// LocalWorkerClient: the WorkerClient interface over a Worker object in the same process (tests
// and single-process tools run the chief's logic against it with no network).
// Thread-safety: as Worker (any thread; calls are serialised by the Worker).
#ifndef PSTRAIN_WORKER_CLIENT_LOCAL_WORKER_CLIENT_H_
#define PSTRAIN_WORKER_CLIENT_LOCAL_WORKER_CLIENT_H_

#include <string>

#include "worker/client/worker_client.h"
#include "worker/step/worker.h"

namespace pstrain {

class LocalWorkerClient : public WorkerClient {
 public:
  // `worker` is not owned and must outlive the client. Timeouts are ignored (calls run inline).
  LocalWorkerClient(Worker* worker, std::string peer) : worker_(worker), peer_(std::move(peer)) {}

  std::string peer() const override { return peer_; }
  absl::Status Handshake(const HandshakeRequest& request, HandshakeResponse* response, int64_t) override {
    return worker_->Handshake(request, response);
  }
  absl::Status Configure(const ConfigureRequest& request, ConfigureResponse* response, int64_t) override {
    return worker_->Configure(request, response);
  }
  absl::Status Reassign(const ReassignRequest& request, ReassignResponse* response, int64_t) override {
    return worker_->Reassign(request, response);
  }
  absl::Status RunSteps(const RunStepsRequest& request, RunStepsResponse* response, int64_t) override {
    return worker_->RunSteps(request, response);
  }
  absl::Status Evaluate(const EvaluateRequest& request, EvaluateResponse* response, int64_t) override {
    return worker_->Evaluate(request, response);
  }

 private:
  Worker* worker_;  // not owned
  std::string peer_;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CLIENT_LOCAL_WORKER_CLIENT_H_
