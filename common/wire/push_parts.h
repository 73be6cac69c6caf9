// A push as a header and its bytes apart: the form in which the tensor channel sends a push, and in
// which a primary ps forwards an update straight from the buffers it arrived in (ps_replicas).
// The header is a PushRequest whose gradients carry name, dtype and shape but no data, and whose
// sparse entries carry shard and num_ids but no ids or values; the payload is each gradient's data,
// then each sparse entry's ids and values, in the header's order.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_WIRE_PUSH_PARTS_H_
#define PSTRAIN_COMMON_WIRE_PUSH_PARTS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/ps.pb.h"

namespace pstrain {

// The bytes of `request` in payload order. They alias `request`, which must outlive them.
std::vector<absl::string_view> PushPayload(const PushRequest& request);

// InvalidArgument unless `parts` is one part per gradient of `header` and two per sparse entry.
absl::Status CheckPayloadParts(const PushRequest& header, size_t parts);

// The whole request a header and its payload stand for (the bytes copied). CheckPayloadParts's
// error when the payload does not fit the header.
absl::StatusOr<PushRequest> AssemblePush(const PushRequest& header, absl::Span<const absl::string_view> payload);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_WIRE_PUSH_PARTS_H_
