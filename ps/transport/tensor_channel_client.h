// The client end of the ps's tensor channel (tensor_channel_wire.h), a PsTransport: pulled values
// land straight in the caller's PullResponse buffers and gradients go out straight from the
// PushRequest, over TCP or TLS. Keeps a pool of idle connections, so concurrent callers get
// connections of their own and sequential ones reuse them. Every size the ps announces is checked
// against the request before anything is allocated for it (a ps that breaks the protocol gets
// INTERNAL, never a huge buffer). Deadlines follow the Env's clock.
// Errors name the peer: UNAVAILABLE when the ps cannot be reached or the connection drops,
// DEADLINE_EXCEEDED at the deadline, UNAUTHENTICATED when TLS refuses a certificate,
// FAILED_PRECONDITION naming both versions when the ps speaks another protocol version or serves
// the channel another way (TLS or not), the ps's own codes for calls it refuses, INTERNAL when the
// ps breaks the protocol.
// Thread-safety: thread-safe.
#ifndef PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_CLIENT_H_
#define PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/platform/env.h"
#include "proto/ps.pb.h"
#include "ps/transport/byte_stream.h"
#include "ps/transport/ps_transport.h"
#include "ps/transport/tls_stream.h"

namespace pstrain {

class TensorChannelClient : public PsTransport {
 public:
  // `address` "host:port" of the ps; `peer` prefixes every error ("ps:1 at host:port"). `env`
  // (not owned) gives the clock; nullptr: Env::Default(), as GrpcPsClient, made by every binary
  // and many tests, has no Env of its own to pass. A bad TLS configuration fails every call with
  // its error.
  TensorChannelClient(const std::string& address, std::string peer, const TransportConfig& config, Env* env = nullptr);
  ~TensorChannelClient() override;

  absl::Status Pull(const PullRequest& request, PullResponse* response, absl::Duration timeout) override;
  absl::Status Push(const PushRequest& request, PushResponse* response, absl::Duration timeout) override;
  // Sends the payload straight from the given buffers (no copy).
  absl::Status PushParts(const PushRequest& header, absl::Span<const absl::string_view> payload,
                         PushResponse* response, absl::Duration timeout) override;

 private:
  struct Connection;
  class Call;

  // An idle pooled connection that is still open, or a new one.
  absl::StatusOr<std::unique_ptr<Connection>> Acquire(absl::Time deadline);
  absl::StatusOr<std::unique_ptr<Connection>> Connect(absl::Time deadline);
  // Opens the socket; the preface, TLS and hello follow in Connect.
  absl::StatusOr<int> Dial(absl::Time deadline) const;
  void Release(std::unique_ptr<Connection> connection);
  absl::Status Named(const absl::Status& s) const;

  std::string host_, port_;  // set once, by the constructor
  const std::string peer_;
  const std::string caller_;
  Env* const env_;
  std::shared_ptr<const TlsContext> tls_;  // null: plaintext
  absl::Status tls_error_;                 // a TLS configuration OpenSSL refused
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_CLIENT_H_
