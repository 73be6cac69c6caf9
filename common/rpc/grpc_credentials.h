// gRPC credentials from a task's TLS configuration (common/security/tls_config.h): with TLS, every
// connection is mutual TLS against the cluster CA, and a server checks each call against the call
// policy (common/security/call_policy.h) by the caller's certificate, before any handler runs;
// a refused call is PERMISSION_DENIED naming the caller and the call, and is logged. Without TLS:
// plaintext. Part of the RPC edge (pstrain_rpc).
// Thread-safety: the credentials are immutable and shared by the channels and servers using them.
#ifndef PSTRAIN_COMMON_RPC_GRPC_CREDENTIALS_H_
#define PSTRAIN_COMMON_RPC_GRPC_CREDENTIALS_H_

#include <functional>
#include <memory>
#include <string>

#include "common/security/call_policy.h"
#include "common/security/tls_config.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace pstrain {

// For a server (AddListeningPort, or the ps's shared port).
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsConfig& tls, SecurityLog log = nullptr);

// For a channel to another task.
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsConfig& tls);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_RPC_GRPC_CREDENTIALS_H_
