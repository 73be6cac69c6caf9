#include "common/rpc/grpc_status.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace pstrain {

grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& s, const std::string& peer) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(peer, ": ", s.error_message(), TlsMismatchHint(s.error_message())));
}

std::string TlsMismatchHint(absl::string_view message) {
  const bool handshake = absl::StrContains(message, "andshake failed");
  if (handshake && (absl::StrContains(message, "wrong version number") ||
                    absl::StrContains(message, "WRONG_VERSION_NUMBER") ||
                    absl::StrContains(message, "packet length too long"))) {
    return " (TLS mismatch: this task uses TLS and the peer does not; start every task of the cluster with the "
           "same --tls_dir, or none)";
  }
  if (!handshake && absl::StrContains(message, "failed to connect") &&
      (absl::StrContains(message, "Socket closed") || absl::StrContains(message, "Connection reset by peer"))) {
    return " (the peer closed the connection at once: if it uses TLS (--tls_dir) and this task does not, give "
           "this task the same --tls_dir; a plaintext task cannot talk to a TLS one)";
  }
  return "";
}

}  // namespace pstrain
