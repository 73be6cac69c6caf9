// The process environment behind a small interface (leveldb's Env): clock, sleeping, environment
// variables and the filesystem operations checkpoints need, so tests can fake time and inject
// faults.
// Thread-safety: implementations must be safe for concurrent use; Env::Default() is.
#ifndef PSTRAIN_COMMON_PLATFORM_ENV_H_
#define PSTRAIN_COMMON_PLATFORM_ENV_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace pstrain {

// An exclusive lock on a file, held until this object is destroyed or its process ends.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

class Env {
 public:
  virtual ~Env() = default;

  // The real process environment. Never null; not owned by the caller.
  static Env* Default();

  virtual int64_t NowMicros() = 0;
  // NowMicros() as a time point: deadlines computed from it follow a faked clock too.
  absl::Time Now() { return absl::FromUnixMicros(NowMicros()); }
  virtual void SleepForMicros(int64_t micros) = 0;
  // The value of the environment variable `name`; empty when unset.
  virtual std::string GetEnvVar(const std::string& name) = 0;

  // Writes `data` to `path` durably: a temporary file in the same directory, fsync, rename, fsync
  // of the directory. A crash leaves either the old file or the new one, never a torn one.
  virtual absl::Status WriteFileAtomic(const std::string& path, absl::string_view data) = 0;
  // The whole file under file_rules.h's kSmallFile rules: a regular file (symlinks followed; a
  // FIFO, device or directory refused without blocking), at most 64 MiB. NotFound when missing;
  // InvalidArgument when not a regular file; OutOfRange when larger; Internal on read errors.
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path) = 0;
  // Reads `path` only when it is a regular file itself: a symlink is not followed (O_NOFOLLOW), a
  // FIFO or device is not opened for reading, and nothing is read when the file holds more than
  // `max_bytes`. NotFound when missing; InvalidArgument for a symlink or a non-regular file;
  // OutOfRange for one larger than max_bytes; Internal on read errors.
  virtual absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes) = 0;
  // WriteFileAtomic of the concatenation of `parts`, written one after another without joining
  // them in memory (a large table shard is not copied to be saved). The default joins them.
  virtual absl::Status WriteFileAtomicParts(const std::string& path, absl::Span<const absl::string_view> parts);
  // Reads the `n` bytes at `offset` of `path` into `dst`: files far larger than memory are read a
  // piece at a time. Like ReadRegularFile, only a regular file itself is read (no symlink
  // followed, no FIFO or device): these read files named by a checkpoint. NotFound when missing;
  // InvalidArgument for a symlink or a non-regular file; DataLoss when the file ends before
  // offset + n; Internal on read errors. The default reads the whole file with ReadFile.
  virtual absl::Status ReadFileRange(const std::string& path, uint64_t offset, size_t n, char* dst);
  // The size of `path` in bytes, with ReadFileRange's refusals (NotFound, InvalidArgument). The
  // default reads it with ReadFile.
  virtual absl::StatusOr<uint64_t> FileSize(const std::string& path);
  virtual bool FileExists(const std::string& path) = 0;
  // Creates `path` and missing parents; OK when it exists.
  virtual absl::Status CreateDirs(const std::string& path) = 0;
  // Names (not paths) of the entries of a directory, sorted.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) = 0;
  // rename(2) followed by an fsync of the parent directory.
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  // Removes a file or a directory tree; OK when missing.
  virtual absl::Status RemoveAll(const std::string& path) = 0;
  // fsync of a directory, so renames inside it are durable.
  virtual absl::Status SyncDir(const std::string& path) = 0;
  // Takes an exclusive lock on `path` (created when missing) without waiting, and writes `owner`
  // into it for whoever finds it taken. The kernel drops the lock with its process (flock), so a
  // crashed owner never leaves it behind. FailedPrecondition when another holder has it, with the
  // `owner` it wrote in the message; InvalidArgument for a symlink or a non-regular file; Internal
  // on other errors. The default: Unimplemented (an Env with no other processes to exclude).
  virtual absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path, absl::string_view owner);
};

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLATFORM_ENV_H_
