// How a task reaches the ps: the transport its pulls and pushes travel by and the TLS material of
// its connections, as its main configures them (--ps_transport, --tls_*: task_bootstrap.h). The
// transports themselves are in ps/transport/ps_transport.h; this is the part every task's
// configuration holds, so it sits below them.
// Thread-safety: values; the functions are pure.
#ifndef PSTRAIN_COMMON_CONFIG_TRANSPORT_CONFIG_H_
#define PSTRAIN_COMMON_CONFIG_TRANSPORT_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/security/tls_config.h"

namespace pstrain {

enum class TransportKind { kTensorChannel, kGrpc };

// "tensor_channel" or "grpc"; InvalidArgument naming both otherwise.
absl::StatusOr<TransportKind> ParseTransportKind(absl::string_view name);
const char* TransportKindName(TransportKind kind);

// How a task reaches the ps: given by its main (flags), never read from the environment here.
struct TransportConfig {
  TransportKind kind = TransportKind::kTensorChannel;
  TlsConfig tls;       // the task's TLS material; tls.enabled false: plaintext
  std::string caller;  // this task, e.g. "worker:0" (the tensor channel's hello; logs)
};

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_TRANSPORT_CONFIG_H_
