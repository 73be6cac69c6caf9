// Conversions between absl::Status and grpc::Status (the codes map 1:1). Part of the RPC edge
// (library pstrain_rpc): logic code never includes this header.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_RPC_GRPC_STATUS_H_
#define PSTRAIN_COMMON_RPC_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace pstrain {

grpc::Status ToGrpcStatus(const absl::Status& s);

// `peer` (e.g. "ps:1 at localhost:2222") is prefixed to the message so errors name the remote task.
// UNAVAILABLE and DEADLINE_EXCEEDED keep their codes so callers can tell a dead peer from a bad request.
absl::Status FromGrpcStatus(const grpc::Status& s, const std::string& peer);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_RPC_GRPC_STATUS_H_
