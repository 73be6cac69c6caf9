// Env::LockFile for the POSIX Env: flock(2) on a file the lock's owner describes itself in.
// Thread-safety: LockFilePosix may be called from any thread; a FileLock is owned by one.
#ifndef PSTRAIN_COMMON_PLATFORM_FILE_LOCK_POSIX_H_
#define PSTRAIN_COMMON_PLATFORM_FILE_LOCK_POSIX_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/platform/env.h"

namespace pstrain {

// Env::LockFile's contract. The descriptor is close-on-exec, so no child process keeps the lock.
absl::StatusOr<std::unique_ptr<FileLock>> LockFilePosix(const std::string& path, absl::string_view owner);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLATFORM_FILE_LOCK_POSIX_H_
