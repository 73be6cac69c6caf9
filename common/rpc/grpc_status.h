// Conversions between absl::Status and grpc::Status (the codes map 1:1). Part of the RPC edge
// (library pstrain_rpc): logic code never includes this header.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_RPC_GRPC_STATUS_H_
#define PSTRAIN_COMMON_RPC_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace pstrain {

grpc::Status ToGrpcStatus(const absl::Status& s);

// `peer` (e.g. "ps:1 at localhost:2222") is prefixed to the message so errors name the remote task.
// UNAVAILABLE and DEADLINE_EXCEEDED keep their codes so callers can tell a dead peer from a bad request.
// A failure typical of one side using TLS and the other not gets TlsMismatchHint appended.
absl::Status FromGrpcStatus(const grpc::Status& s, const std::string& peer);

// For gRPC's message of a failed connection: "" or a hint saying that one side uses TLS and the
// other not, and which flag to set. gRPC says it only indirectly: a TLS client meeting a plaintext
// server fails its handshake with "wrong version number"; a plaintext client meeting a TLS server
// sees the connection closed at once ("Socket closed").
std::string TlsMismatchHint(absl::string_view grpc_message);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_RPC_GRPC_STATUS_H_
