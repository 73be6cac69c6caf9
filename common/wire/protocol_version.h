// The wire protocol version carried by every handshake. Bump it whenever a message's meaning
// changes incompatibly, so that mismatched binaries fail with a clear message.
#ifndef PSTRAIN_COMMON_WIRE_PROTOCOL_VERSION_H_
#define PSTRAIN_COMMON_WIRE_PROTOCOL_VERSION_H_

#include <string>

#include "absl/status/status.h"

namespace pstrain {

// 2: embedding-table rows (SparseRows) in pulls and pushes. 3: the tensor channel opens with a
// hello (version and task) and may run over TLS; the chunked PullStream / PushStream are gone.
// 4: shards of non-trainable variables (ShardSpecProto.non_trainable) add pushes as they are; an
// older ps would run its optimizer on them. 5: dynamic table shards (CreateShardsRequest.dynamic_shards)
// pulled and pushed by key (PullKeys / PushKeys); an older ps would ignore them.
inline constexpr int kProtocolVersion = 5;

// Returns OK when `theirs` equals kProtocolVersion; otherwise FailedPrecondition naming both
// versions and `peer` (e.g. "ps:1 at localhost:2222").
absl::Status CheckProtocolVersion(int theirs, const std::string& peer);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_WIRE_PROTOCOL_VERSION_H_
