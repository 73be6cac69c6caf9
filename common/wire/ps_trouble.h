// How a worker tells the chief that a closure failed because of one ps, not because of itself:
// the worker answers ABORTED with a message that starts "ps:N " (N: the ps's index in the
// cluster's ps list) and names the ps call's failure. The chief re-queues the closure without
// counting the worker lost, and checks that ps (chief/recovery/ps_recovery.h). Kept in common/ because the
// worker writes the signal and the chief reads it.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_WIRE_PS_TROUBLE_H_
#define PSTRAIN_COMMON_WIRE_PS_TROUBLE_H_

#include <optional>

#include "absl/status/status.h"

namespace pstrain {

// True when a failed ps call means the ps is gone, silent, cut off, or restarted without the
// shards asked for: UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED (a shard re-created under a parked
// call) and NOT_FOUND for a shard the ps "is not held by" (a fresh process). Requests the ps
// refuses for their content (InvalidArgument etc.) are not trouble of the ps.
bool IsPsTrouble(const absl::Status& ps_call);

// The worker's answer for a closure that failed on ps `ps`: ABORTED "ps:<ps> <CODE>: <message>".
absl::Status PsTroubleStatus(int ps, const absl::Status& ps_call);

// The ps index of a worker's PsTroubleStatus, also when the client prefixed it with the worker's
// name ("worker:0 at host:port: ps:1 ..."); nullopt for any other status.
std::optional<int> PsTroubleIndex(const absl::Status& status);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_WIRE_PS_TROUBLE_H_
