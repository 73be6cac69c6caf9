// Process exit codes shared by every pstrain binary (what orchestrators and scripts rely on).
#ifndef PSTRAIN_COMMON_PLATFORM_EXIT_CODES_H_
#define PSTRAIN_COMMON_PLATFORM_EXIT_CODES_H_

#include "absl/status/status.h"

namespace pstrain {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeFailure = 1;
inline constexpr int kExitBadConfiguration = 2;
// A task stopped by SIGTERM or SIGINT (128 + SIGTERM): orchestrators treat it as retryable.
inline constexpr int kExitStoppedBySignal = 143;

// Maps a failed start-up or run to an exit code: configuration problems (InvalidArgument,
// NotFound, FailedPrecondition, OutOfRange) and unusable files (DataLoss: a checkpoint or data
// file that fails verification; restarting cannot help) exit 2, everything else 1, OK exits 0.
inline int ExitCodeFor(const absl::Status& s) {
  if (s.ok()) return kExitOk;
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kDataLoss:
      return kExitBadConfiguration;
    default:
      return kExitRuntimeFailure;
  }
}

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLATFORM_EXIT_CODES_H_
