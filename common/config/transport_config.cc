#include "common/config/transport_config.h"

#include "absl/strings/str_cat.h"

namespace pstrain {

absl::StatusOr<TransportKind> ParseTransportKind(absl::string_view name) {
  if (name == "tensor_channel") return TransportKind::kTensorChannel;
  if (name == "grpc") return TransportKind::kGrpc;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown ps transport \"", name,
      "\": tensor_channel (the default, fastest) or grpc (unary gRPC calls, for networks that pass only HTTP/2)"));
}

const char* TransportKindName(TransportKind kind) { return kind == TransportKind::kGrpc ? "grpc" : "tensor_channel"; }

}  // namespace pstrain
