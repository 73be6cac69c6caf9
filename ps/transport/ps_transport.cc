#include "ps/transport/ps_transport.h"

#include "common/wire/push_parts.h"

namespace pstrain {

absl::Status PsTransport::PushParts(const PushRequest& header, absl::Span<const absl::string_view> payload,
                                    PushResponse* response, absl::Duration timeout) {
  absl::StatusOr<PushRequest> request = AssemblePush(header, payload);
  if (!request.ok()) return request.status();
  return Push(*request, response, timeout);
}

}  // namespace pstrain
