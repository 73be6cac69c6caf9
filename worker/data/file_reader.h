// Reads a whole file that may be gzip-compressed (zlib reads plain files unchanged).
// Thread-safety: pure function.
#ifndef PSTRAIN_WORKER_DATA_FILE_READER_H_
#define PSTRAIN_WORKER_DATA_FILE_READER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace pstrain {

// NotFound when the file cannot be opened; DataLoss when a gzip stream is corrupt or truncated;
// InvalidArgument when the (uncompressed) contents pass `max_bytes` (0: this host's default
// memory budget), found while reading, so a gzip bomb or an endless file stops there. All name
// `path`.
absl::StatusOr<std::string> ReadMaybeGzipFile(const std::string& path, int64_t max_bytes = 0);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_FILE_READER_H_
