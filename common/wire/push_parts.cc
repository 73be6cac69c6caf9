#include "common/wire/push_parts.h"

#include "absl/strings/str_cat.h"

namespace pstrain {

std::vector<absl::string_view> PushPayload(const PushRequest& request) {
  std::vector<absl::string_view> payload;
  payload.reserve(static_cast<size_t>(request.gradients_size() + 2 * request.sparse_size()));
  for (const ShardGradient& g : request.gradients()) payload.push_back(g.gradient().data());
  for (const SparseRows& r : request.sparse()) {
    payload.push_back(r.ids());
    payload.push_back(r.values());
  }
  return payload;
}

absl::Status CheckPayloadParts(const PushRequest& header, size_t parts) {
  const size_t needed = static_cast<size_t>(header.gradients_size()) + 2 * static_cast<size_t>(header.sparse_size());
  if (parts == needed) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("a push of ", header.gradients_size(), " gradients and ",
                                                 header.sparse_size(), " sparse entries needs ", needed,
                                                 " payload parts, not ", parts));
}

absl::StatusOr<PushRequest> AssemblePush(const PushRequest& header, absl::Span<const absl::string_view> payload) {
  if (absl::Status s = CheckPayloadParts(header, payload.size()); !s.ok()) return s;
  PushRequest request = header;
  size_t k = 0;
  for (ShardGradient& g : *request.mutable_gradients()) {
    g.mutable_gradient()->set_data(payload[k].data(), payload[k].size());
    ++k;
  }
  for (SparseRows& r : *request.mutable_sparse()) {
    r.set_ids(payload[k].data(), payload[k].size());
    r.set_values(payload[k + 1].data(), payload[k + 1].size());
    k += 2;
  }
  return request;
}

}  // namespace pstrain
