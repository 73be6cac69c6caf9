// Paths read from files pstrain did not just write (a checkpoint's index.json names its shard
// files): such a name must be one plain path component, so it can never leave its directory, and
// the file is read with Env::ReadRegularFile, which follows no symlink. One helper for every
// reader of checkpoint files (ps restores, the chief's verification, `evaluate`, `inspect`).
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_PLATFORM_CONFINED_PATH_H_
#define PSTRAIN_COMMON_PLATFORM_CONFINED_PATH_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pstrain {

// OK when `name` is a plain file name: not empty, at most 255 bytes, not "." or "..", and without
// '/' or NUL (so neither absolute nor climbing). InvalidArgument naming `what` otherwise.
absl::Status CheckPlainFileName(absl::string_view name, absl::string_view what);

// `dir`/`name` once CheckPlainFileName(name) holds; its error otherwise.
absl::StatusOr<std::string> PathInDir(const std::string& dir, absl::string_view name, absl::string_view what);

// A checkpoint directory a peer names (a ps's Save and Restore): OK when its last component is a
// checkpoint directory's name (ckpt-<step>, or ckpt-<step>.tmp-<pid> while it is written), no
// component is "." or "..", and, when `root` is not empty, it lies inside `root` (both made
// absolute against the working directory) with no symlink among its existing components below
// `root`. So a peer without credentials cannot make a ps write or read anywhere else.
// InvalidArgument naming `dir` and `root` otherwise.
absl::Status CheckCheckpointDir(const std::string& root, const std::string& dir);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLATFORM_CONFINED_PATH_H_
