// The server end of the ps's tensor channel: what every connection's session
// (tensor_channel_session.h) shares — the PsServer it serves, the TLS context and mode, the call
// policy's log, the bounds on announced-but-undelivered bytes, the deadlines and the clock. The
// connections themselves are accepted, sorted from gRPC's and driven by the SharedPortListener.
// Thread-safety: immutable after Create, except the budgets (thread-safe).
#ifndef PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_SERVER_H_
#define PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/platform/env.h"
#include "common/security/call_policy.h"
#include "common/security/tls_config.h"
#include "ps/store/ps_server.h"
#include "ps/transport/byte_budget.h"
#include "ps/transport/byte_stream.h"
#include "ps/transport/tensor_channel_wire.h"
#include "ps/transport/tls_stream.h"

namespace pstrain {

class TensorChannelSession;

class TensorChannelServer {
 public:
  struct Options {
    // Enabled: only TLS clients presenting certificates of the cluster CA, each call checked
    // against the call policy; otherwise plaintext clients only.
    TlsConfig tls;
    // Once a frame's first byte arrived, the rest of it must within this (a response must be
    // taken within it too); the connection is closed otherwise.
    absl::Duration frame_timeout = absl::Seconds(120);
    // Frame messages announced and not yet delivered, all connections together (beyond: closed).
    int64_t max_pending_message_bytes = int64_t{64} << 20;
    // Call payloads reserved and not yet delivered, all connections together (beyond: a call waits).
    int64_t max_pending_payload_bytes = int64_t{1} << 30;
    Env* env = nullptr;  // the clock of every deadline; not owned. REQUIRED: non-null
    SecurityLog log;     // refused calls and connections, one line each; empty: std::cerr
  };

  // `ps` is not owned and must outlive the server and every session. InvalidArgument when OpenSSL
  // refuses the TLS material.
  static absl::StatusOr<std::unique_ptr<TensorChannelServer>> Create(PsServer* ps, Options options);

  // The session of a connection whose preface was `kind` (kPlain or kTls), read within its
  // `preface_deadline`, which the TLS handshake and the hello must meet too. `stream` moves the
  // connection's bytes (a PlainStream over `fd`; TLS sessions wrap `fd` themselves).
  std::shared_ptr<TensorChannelSession> NewSession(int fd, std::unique_ptr<ByteStream> stream, PrefaceKind kind,
                                                   absl::Time preface_deadline);

  // What a protocol version 2 client reads before the ps closes its connection.
  static std::string LegacyRefusal();

  PsServer* ps() const { return ps_; }
  const Options& options() const { return options_; }
  Env* env() const { return env_; }
  const std::shared_ptr<const TlsContext>& tls() const { return tls_; }
  ByteBudget* messages() { return &messages_; }
  ByteBudget* payloads() { return &payloads_; }
  void Log(const std::string& line) const;

 private:
  TensorChannelServer(PsServer* ps, Options options);

  PsServer* const ps_;
  const Options options_;
  Env* const env_;
  std::shared_ptr<const TlsContext> tls_;  // null: plaintext
  ByteBudget messages_;
  ByteBudget payloads_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_SERVER_H_
