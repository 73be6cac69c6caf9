#include "ps/transport/tensor_channel_server.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/wire/protocol_version.h"
#include "proto/ps.pb.h"
#include "ps/transport/tensor_channel_session.h"

namespace pstrain {

TensorChannelServer::TensorChannelServer(PsServer* ps, Options options)
    : ps_(ps),
      options_(std::move(options)),
      env_(options_.env),
      messages_(options_.max_pending_message_bytes),
      payloads_(options_.max_pending_payload_bytes) {}

absl::StatusOr<std::unique_ptr<TensorChannelServer>> TensorChannelServer::Create(PsServer* ps, Options options) {
  std::unique_ptr<TensorChannelServer> server(new TensorChannelServer(ps, std::move(options)));
  if (server->options_.tls.enabled) {
    absl::StatusOr<std::shared_ptr<const TlsContext>> tls =
        TlsContext::Create(server->options_.tls, TlsContext::Side::kServer);
    if (!tls.ok()) return tls.status();
    server->tls_ = *std::move(tls);
  }
  return server;
}

std::shared_ptr<TensorChannelSession> TensorChannelServer::NewSession(int fd, std::unique_ptr<ByteStream> stream,
                                                                      PrefaceKind kind, absl::Time preface_deadline) {
  return std::make_shared<TensorChannelSession>(this, fd, std::move(stream), kind, preface_deadline);
}

std::string TensorChannelServer::LegacyRefusal() {
  TensorCallResponse refusal;
  refusal.set_code(static_cast<int>(absl::StatusCode::kFailedPrecondition));
  refusal.set_message(absl::StrCat("protocol version mismatch: this client speaks version 2, the ps speaks ",
                                   kProtocolVersion, "; run the same pstrain release on every task"));
  return FrameHead(refusal, 0);
}

void TensorChannelServer::Log(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::cerr << line << std::endl;
  }
}

}  // namespace pstrain
