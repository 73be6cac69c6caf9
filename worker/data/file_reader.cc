#include "worker/data/file_reader.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/checked_math.h"
#include "common/env.h"
#include "common/memory_budget.h"

namespace pstrain {

absl::StatusOr<std::string> ReadMaybeGzipFile(const std::string& path, int64_t max_bytes) {
  if (max_bytes <= 0) max_bytes = MemoryBudgetBytes(Env::Default(), 0).value_or(kFallbackMemoryBudgetBytes);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("data file ", path, " is a directory"));
  }
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open data file ", path, ": ", std::strerror(errno)));
  }
  gzbuffer(file, 1 << 17);
  std::string out;
  char chunk[1 << 16];
  while (true) {
    const int n = gzread(file, chunk, sizeof(chunk));
    if (n < 0) {
      int code = 0;
      const std::string why = gzerror(file, &code);
      gzclose(file);
      return absl::DataLossError(absl::StrCat("data file ", path, " is corrupt: ", why));
    }
    if (n == 0) break;
    out.append(chunk, static_cast<size_t>(n));
    if (static_cast<int64_t>(out.size()) > max_bytes) {
      gzclose(file);
      return absl::InvalidArgumentError(absl::StrCat("data file ", path, " holds more than ", FormatBytes(max_bytes),
                                                     " (uncompressed), more than the memory budget (",
                                                     kMemoryBudgetFlag, ")"));
    }
  }
  int code = 0;
  const std::string why = gzerror(file, &code);
  gzclose(file);
  // A gzip stream cut short reads as a clean end of file with Z_BUF_ERROR pending.
  if (code != Z_OK && code != Z_STREAM_END) {
    return absl::DataLossError(absl::StrCat("data file ", path, " is truncated or corrupt: ", why));
  }
  return out;
}

}  // namespace pstrain
