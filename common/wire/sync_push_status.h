// How a ps says that a sync push brings a gradient it has counted already: the push names a data
// part whose gradient for that step is collected (waiting for the other parts) or applied (the
// step is done). Both are FAILED_PRECONDITION and leave the ps unchanged; a worker re-running a
// lost worker's closure treats them as "this part's update is in" and goes on.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_WIRE_SYNC_PUSH_STATUS_H_
#define PSTRAIN_COMMON_WIRE_SYNC_PUSH_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/match.h"

namespace pstrain {

// The phrases the ps puts in those two messages (and nowhere else).
inline constexpr char kDuplicateSyncPush[] = "duplicate push from part";
inline constexpr char kStaleSyncPush[] = "stale push from part";

inline bool IsAlreadyCountedSyncPush(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         (absl::StrContains(status.message(), kDuplicateSyncPush) ||
          absl::StrContains(status.message(), kStaleSyncPush));
}

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_WIRE_SYNC_PUSH_STATUS_H_
