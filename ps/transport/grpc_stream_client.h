// Client halves of the streaming PullStream / PushStream RPCs over raw ByteBuffers: gradients are
// sent straight from the request's memory in chunks, pulled chunks are copied once from the
// received slices into a (reusable) PullResponse. Part of the gRPC edge.
// Thread-safety: thread-safe (gRPC channels are).
#ifndef PSTRAIN_PS_TRANSPORT_GRPC_STREAM_CLIENT_H_
#define PSTRAIN_PS_TRANSPORT_GRPC_STREAM_CLIENT_H_

#include <memory>

#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/status.h"
#include "proto/ps.pb.h"

namespace pstrain {

class PsStreamClient {
 public:
  // `channel` is shared with the caller's stub.
  explicit PsStreamClient(std::shared_ptr<grpc::Channel> channel);

  // Pulls over PullStream into `response`. Reusing one response across pulls of the same shards
  // reuses its buffers (no fresh allocation, no zero-filling). Protocol violations: INTERNAL.
  grpc::Status Pull(grpc::ClientContext* context, const PullRequest& request, PullResponse* response);

  // Pushes over PushStream: a header with names, dtypes and shapes, then the bytes in chunks.
  // The request's bytes are sent without copies and must not change until this returns.
  grpc::Status Push(grpc::ClientContext* context, const PushRequest& request, PushResponse* response);

 private:
  std::shared_ptr<grpc::Channel> channel_;
  // Bound to the raw methods of PsService (the generated stub only has the typed ones).
  const grpc::internal::RpcMethod pull_method_;
  const grpc::internal::RpcMethod push_method_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_GRPC_STREAM_CLIENT_H_
