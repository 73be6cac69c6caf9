#include "worker/server/worker_service.h"

#include "common/rpc/grpc_status.h"

namespace pstrain {
namespace {

// Parks the reactor, runs `work` on the queue, then finishes the call with its status.
template <typename Work>
grpc::ServerUnaryReactor* RunOffReactor(grpc::CallbackServerContext* ctx, WorkQueue* queue, Work work) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  queue->Schedule([reactor, work] { reactor->Finish(ToGrpcStatus(work())); });
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* WorkerServiceImpl::Handshake(grpc::CallbackServerContext* ctx, const HandshakeRequest* request,
                                                   HandshakeResponse* response) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();  // cheap and non-blocking: answered inline
  reactor->Finish(ToGrpcStatus(worker_->Handshake(*request, response)));
  return reactor;
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Configure(grpc::CallbackServerContext* ctx, const ConfigureRequest* request,
                                                   ConfigureResponse* response) {
  return RunOffReactor(ctx, &queue_, [=] { return worker_->Configure(*request, response); });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Reassign(grpc::CallbackServerContext* ctx, const ReassignRequest* request,
                                                      ReassignResponse* response) {
  return RunOffReactor(ctx, &queue_, [=] { return worker_->Reassign(*request, response); });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::RunSteps(grpc::CallbackServerContext* ctx, const RunStepsRequest* request,
                                                  RunStepsResponse* response) {
  return RunOffReactor(ctx, &queue_, [=] { return worker_->RunSteps(*request, response); });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Evaluate(grpc::CallbackServerContext* ctx, const EvaluateRequest* request,
                                                  EvaluateResponse* response) {
  return RunOffReactor(ctx, &queue_, [=] { return worker_->Evaluate(*request, response); });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Shutdown(grpc::CallbackServerContext* ctx, const ShutdownRequest* request,
                                                      ShutdownResponse* response) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(on_shutdown_ ? on_shutdown_(*request)
                                            : absl::UnimplementedError("this worker cannot be shut down remotely")));
  return reactor;
}

}  // namespace pstrain
