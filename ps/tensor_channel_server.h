// Serves pulls and pushes on one tensor-channel connection (see tensor_channel_wire.h): reads a
// call, runs it on the PsServer (waiting on this connection's own thread while a sync call is
// parked, never on a gRPC thread), and answers it; values go out straight from the pulled
// snapshots and gradients arrive straight into the ps's pooled buffers. Part of the RPC edge.
// Thread-safety: Serve may run on many threads at once, one per connection.
#ifndef PSTRAIN_PS_TENSOR_CHANNEL_SERVER_H_
#define PSTRAIN_PS_TENSOR_CHANNEL_SERVER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "proto/ps.pb.h"
#include "ps/ps_server.h"
#include "ps/tensor_channel_wire.h"

namespace pstrain {

// What all connections together may have announced but not delivered: frame messages (whose
// memory grows as they arrive; a connection passing the bound is closed), and payloads: push
// gradients and table rows, and the row ids of table pulls (received into buffers sized by the
// shard or checked against the rows' count, allocated only once there is room; a call waits for it).
inline constexpr int64_t kMaxPendingMessageBytes = int64_t{64} << 20;
inline constexpr int64_t kMaxPendingPayloadBytes = int64_t{1} << 30;

class TensorChannelServer {
 public:
  // `ps` is not owned and must outlive every Serve call.
  explicit TensorChannelServer(PsServer* ps, int64_t max_pending_message_bytes = kMaxPendingMessageBytes,
                               int64_t max_pending_payload_bytes = kMaxPendingPayloadBytes)
      : ps_(ps), messages_(max_pending_message_bytes), payloads_(max_pending_payload_bytes) {}

  // Answers calls on `fd` (a connection whose preface was already read) until the client closes
  // it, it fails, or the client breaks the protocol. Does not close `fd`.
  void Serve(int fd);

  // Payload bytes connections have been given room for and not yet delivered (for tests and stats).
  int64_t pending_payload_bytes() const { return payloads_.taken(); }

 private:
  // Each returns a status only when the connection must be closed; the call's own outcome goes to
  // the client in the response.
  absl::Status ServePull(FrameIo* io, TensorCallRequest* call, uint64_t payload_bytes);
  absl::Status ServePush(FrameIo* io, const TensorCallRequest& request, uint64_t payload_bytes);

  PsServer* const ps_;
  ByteBudget messages_;
  ByteBudget payloads_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TENSOR_CHANNEL_SERVER_H_
