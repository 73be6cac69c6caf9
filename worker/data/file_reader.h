// Reads a whole file that may be gzip-compressed (zlib reads plain files unchanged).
// Thread-safety: pure function.
#ifndef PSTRAIN_WORKER_DATA_FILE_READER_H_
#define PSTRAIN_WORKER_DATA_FILE_READER_H_

#include <string>

#include "absl/status/statusor.h"

namespace pstrain {

// NotFound when the file cannot be opened; DataLoss when a gzip stream is corrupt or truncated.
// Both name `path`.
absl::StatusOr<std::string> ReadMaybeGzipFile(const std::string& path);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_FILE_READER_H_
