// Client halves of the streaming PullStream / PushStream RPCs: send a PushRequest's gradients in
// chunks, and assemble pulled chunks straight into a (reusable) PullResponse. Part of the gRPC edge.
// Thread-safety: pure functions over the given stub, which is thread-safe.
#ifndef PSTRAIN_PS_GRPC_STREAM_CLIENT_H_
#define PSTRAIN_PS_GRPC_STREAM_CLIENT_H_

#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"
#include "proto/ps.grpc.pb.h"

namespace pstrain {

// Pulls over PullStream into `response`. Reusing one response across pulls of the same shards
// reuses its buffers (no fresh allocation, no zero-filling). Protocol violations by the server
// give INTERNAL.
grpc::Status PullOverStream(PsService::StubInterface* stub, grpc::ClientContext* context, const PullRequest& request,
                            PullResponse* response);

// Pushes over PushStream: a header with the gradients' names, dtypes and shapes, then their bytes
// in kStreamChunkBytes chunks.
grpc::Status PushOverStream(PsService::StubInterface* stub, grpc::ClientContext* context, const PushRequest& request,
                            PushResponse* response);

}  // namespace pstrain

#endif  // PSTRAIN_PS_GRPC_STREAM_CLIENT_H_
