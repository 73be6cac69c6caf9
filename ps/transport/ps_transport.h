// PsTransport: how pulls and pushes (dense tensors and embedding-table rows) travel to one ps task.
// Two implementations, chosen by the task's configuration (TransportConfig, common/config/transport_config.h):
//   the tensor channel (tensor_channel_client.h): the ps's own framing on its gRPC port, over TCP
//     or TLS, bytes sent from and received into the tensors themselves; the fast path.
//   unary gRPC (grpc_transport.h): PsService's Pull and Push, for networks that pass only HTTP/2.
// Both give PsServer's answers and error codes (ps/store/ps_server.h), with the peer named in every
// message: UNAVAILABLE / DEADLINE_EXCEEDED when the ps cannot be reached in time (retryable), the
// ps's own codes for calls it refuses, INTERNAL when the ps breaks the protocol.
// Thread-safety: implementations are thread-safe; concurrent calls travel on connections of their
// own.
#ifndef PSTRAIN_PS_TRANSPORT_PS_TRANSPORT_H_
#define PSTRAIN_PS_TRANSPORT_PS_TRANSPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/config/transport_config.h"
#include "proto/ps.pb.h"

namespace pstrain {

class PsTransport {
 public:
  virtual ~PsTransport() = default;
  // Reusing `response` across pulls of the same shards reuses its buffers.
  virtual absl::Status Pull(const PullRequest& request, PullResponse* response, absl::Duration timeout) = 0;
  // The request's bytes are only read during the call.
  virtual absl::Status Push(const PushRequest& request, PushResponse* response, absl::Duration timeout) = 0;
  // The same push given as a header without bytes (bulk_messages.h's PushHeader) and the bytes
  // apart, in PushPayload's order, read only during the call: how a primary ps forwards an update
  // straight from the buffers it received it in. This default copies them into one request.
  virtual absl::Status PushParts(const PushRequest& header, absl::Span<const absl::string_view> payload,
                                 PushResponse* response, absl::Duration timeout);
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_PS_TRANSPORT_H_
