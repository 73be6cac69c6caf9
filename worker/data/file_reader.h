// Reads a file that may be gzip-compressed (zlib reads plain files unchanged): whole, or streamed
// in chunks so a file larger than memory can be parsed as it is read.
// Thread-safety: pure functions.
#ifndef PSTRAIN_WORKER_DATA_FILE_READER_H_
#define PSTRAIN_WORKER_DATA_FILE_READER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pstrain {

class Env;

// NotFound when the file cannot be opened; InvalidArgument when it is a directory, or when the
// (uncompressed) contents pass `max_bytes` (0: the default memory budget of the host `env`
// describes; env not owned), found while
// reading, so a gzip bomb or an endless file stops there; DataLoss when a gzip stream is corrupt
// or truncated. All name `path`.
absl::StatusOr<std::string> ReadMaybeGzipFile(Env* env, const std::string& path, int64_t max_bytes = 0);

// Calls `consume` with the file's (decompressed) contents in successive chunks of at most
// `chunk_bytes` (views valid during the call only). Errors as ReadMaybeGzipFile; DataLoss for a
// truncated gzip stream comes after `consume` has seen the bytes before the cut. A non-OK status
// from `consume` stops the read and is returned as is. REQUIRES: chunk_bytes >= 1.
absl::Status ReadMaybeGzipFileInChunks(const std::string& path, size_t chunk_bytes,
                                       const std::function<absl::Status(absl::string_view)>& consume);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_FILE_READER_H_
