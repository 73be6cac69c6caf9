// The client half of the ps's tensor channel (tensor_channel_wire.h): pulls land straight in the
// caller's PullResponse buffers, gradients go out straight from the PushRequest, with no HTTP/2
// framing or message copies in between. Keeps a pool of idle connections, so concurrent callers
// get connections of their own and sequential ones reuse them. Part of the RPC edge.
// Errors name the peer, with the codes GrpcPsClient gives: UNAVAILABLE when the ps cannot be
// reached or the connection drops, DEADLINE_EXCEEDED at the deadline, the ps's own codes for
// requests it rejects, INTERNAL when the ps breaks the protocol.
// Thread-safety: thread-safe.
#ifndef PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_CLIENT_H_
#define PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_CLIENT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/ps.pb.h"

namespace pstrain {

class TensorChannelClient {
 public:
  // `address` "host:port" of the ps; `peer` prefixes every error ("ps:1 at host:port").
  TensorChannelClient(const std::string& address, std::string peer);
  ~TensorChannelClient();

  // Same answers as PsServer::Pull. Reusing one response across pulls of the same shards reuses
  // its buffers.
  absl::Status Pull(const PullRequest& request, PullResponse* response, absl::Time deadline);
  // Same answers as PsServer::Push. The request's bytes are sent without copies.
  absl::Status Push(const PushRequest& request, PushResponse* response, absl::Time deadline);

 private:
  // An idle pooled connection that is still open, or a new one.
  absl::StatusOr<int> Acquire(absl::Time deadline);
  absl::StatusOr<int> Connect(absl::Time deadline) const;
  // Returns a connection to the pool after a complete call, or closes it.
  void Release(int fd, bool reusable);
  absl::Status Named(const absl::Status& s) const;
  // Sends `call` and then `payload` on a pooled connection and reads the answer up to its payload.
  // OK: the ps accepted the call; `*fd` is the connection, for the caller to read the
  // `*payload_bytes` bytes that follow and then Release. Otherwise the connection was already
  // released (kept when the ps rejected the call, closed when it went out of step).
  absl::Status Exchange(const TensorCallRequest& call, const std::vector<absl::string_view>& payload,
                        absl::Time deadline, TensorCallResponse* answer, uint64_t* payload_bytes, int* fd);

  std::string host_, port_;  // set once, by the constructor
  const std::string peer_;
  absl::Mutex mu_;
  std::vector<int> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_CLIENT_H_
