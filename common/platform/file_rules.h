// One set of rules for every file pstrain reads: job specs, TF_CONFIG files, TLS files, data files,
// a checkpoint's files, a run's metrics.jsonl. A file is read only when it is a regular file (a
// FIFO, device, socket or directory is refused without blocking: opened with O_NONBLOCK, then
// fstat), only up to a size limit of its kind (counted while reading, so a file that grows, a
// /proc file or a gzip stream is stopped there too), and line-based readers refuse a line longer
// than their line limit. Symlinks are followed only for the kinds that say so (a TLS file mounted
// from a Kubernetes secret is a symlink; a checkpoint's files never are). Every error names the file,
// its kind and the limit.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_PLATFORM_FILE_RULES_H_
#define PSTRAIN_COMMON_PLATFORM_FILE_RULES_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pstrain {

// The rules of one kind of file.
struct FileRules {
  const char* kind;        // in messages: "job spec", "TLS file", ...
  int64_t max_bytes;       // most bytes read (uncompressed for gzip data)
  bool follow_symlinks;    // false: a symlink is refused (O_NOFOLLOW)
  int64_t max_line_bytes;  // line-based readers: the longest line; 0 when not read by lines
};

inline constexpr int64_t kMiB = int64_t{1} << 20;
// Job specs and TF_CONFIG / cluster files (JSON documents).
inline constexpr FileRules kJsonDocumentFile{"JSON file", 256 * kMiB, true, 0};
// Certificates and keys (PEM).
inline constexpr FileRules kTlsFile{"TLS file", 1 * kMiB, true, 0};
// A checkpoint's data_positions.json (written by pstrain, next to the checkpoint's shards).
inline constexpr FileRules kDataPositionsJsonFile{"data positions file", 64 * kMiB, false, 0};
// A run's metrics.jsonl, read by `pstrain plot`: one JSON object per line.
inline constexpr FileRules kMetricsFile{"metrics file", 4096 * kMiB, false, 1 * kMiB};
// Any other small file read whole through Env::ReadFile (/proc and cgroup files, a datagen summary).
inline constexpr FileRules kSmallFile{"file", 64 * kMiB, true, 0};
// Data files (IDX, CSV, Criteo TSV, plain or gzip): max_bytes is the memory budget, given per read.
inline constexpr int64_t kMaxDataLineBytes = 1 * kMiB;

// Opens `path` for reading when it is a regular file (following a symlink only when
// rules.follow_symlinks); the descriptor (blocking, close-on-exec) is the caller's to close, its
// size at open goes to `size` when not null. NotFound when missing or not readable; InvalidArgument
// for a symlink not followed, a directory, FIFO, device or socket; Internal when fstat fails.
absl::StatusOr<int> OpenRegularFileForReading(const std::string& path, const FileRules& rules, int64_t* size);

// The whole of `path` under `rules`: OutOfRange when it holds more than rules.max_bytes (found
// while reading; nothing more is read). Errors as OpenRegularFileForReading otherwise.
absl::StatusOr<std::string> ReadFileWithRules(const std::string& path, const FileRules& rules);

// Calls `line_fn(line_number, line)` (1-based; without the '\n') for each line of `path`, read in
// pieces: OutOfRange for a line longer than rules.max_line_bytes (naming the line) or a file past
// rules.max_bytes. A non-OK status from `line_fn` stops the read and is returned as is.
absl::Status ForEachLineWithRules(const std::string& path, const FileRules& rules,
                                  const std::function<absl::Status(int64_t, absl::string_view)>& line_fn);

// OutOfRange "<kind> <path>: line <n> is longer than <max> bytes" when `length` > max_line_bytes.
absl::Status CheckLineLength(const std::string& path, const FileRules& rules, int64_t line, int64_t length);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLATFORM_FILE_RULES_H_
