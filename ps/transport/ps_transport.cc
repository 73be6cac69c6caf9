#include "ps/transport/ps_transport.h"

#include "absl/strings/str_cat.h"
#include "common/wire/push_parts.h"

namespace pstrain {

absl::StatusOr<TransportKind> ParseTransportKind(absl::string_view name) {
  if (name == "tensor_channel") return TransportKind::kTensorChannel;
  if (name == "grpc") return TransportKind::kGrpc;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown ps transport \"", name,
      "\": tensor_channel (the default, fastest) or grpc (unary gRPC calls, for networks that pass only HTTP/2)"));
}

absl::Status PsTransport::PushParts(const PushRequest& header, absl::Span<const absl::string_view> payload,
                                    PushResponse* response, absl::Duration timeout) {
  absl::StatusOr<PushRequest> request = AssemblePush(header, payload);
  if (!request.ok()) return request.status();
  return Push(*request, response, timeout);
}

const char* TransportKindName(TransportKind kind) { return kind == TransportKind::kGrpc ? "grpc" : "tensor_channel"; }

}  // namespace pstrain
