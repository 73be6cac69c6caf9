#include "worker/data/file_reader.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/plan/memory_budget.h"
#include "common/platform/checked_math.h"
#include "common/platform/env.h"

namespace pstrain {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

}  // namespace

absl::Status ReadMaybeGzipFileInChunks(const std::string& path, size_t chunk_bytes,
                                       const std::function<absl::Status(absl::string_view)>& consume) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("data file ", path, " is a directory; give the file(s) in it"));
  }
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open data file ", path, ": ", std::strerror(errno)));
  }
  gzbuffer(file.get(), 1 << 17);
  std::string chunk(std::min<size_t>(std::max<size_t>(chunk_bytes, 1), INT_MAX), '\0');
  while (true) {
    const int n = gzread(file.get(), chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      int code = 0;
      return absl::DataLossError(absl::StrCat("data file ", path, " is corrupt: ", gzerror(file.get(), &code)));
    }
    if (n == 0) break;
    absl::Status consumed = consume(absl::string_view(chunk.data(), static_cast<size_t>(n)));
    if (!consumed.ok()) return consumed;
  }
  int code = 0;
  const std::string why = gzerror(file.get(), &code);
  // A gzip stream cut short reads as a clean end of file with Z_BUF_ERROR pending.
  if (code != Z_OK && code != Z_STREAM_END) {
    return absl::DataLossError(absl::StrCat("data file ", path, " is truncated or corrupt: ", why));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadMaybeGzipFile(Env* env, const std::string& path, int64_t max_bytes) {
  if (max_bytes <= 0) max_bytes = MemoryBudgetBytes(env, 0).value_or(kFallbackMemoryBudgetBytes);
  std::string out;
  absl::Status status = ReadMaybeGzipFileInChunks(path, 1 << 16, [&](absl::string_view chunk) {
    if (chunk.size() > static_cast<uint64_t>(max_bytes) - out.size()) {
      return absl::InvalidArgumentError(absl::StrCat("data file ", path, " holds more than ", FormatBytes(max_bytes),
                                                     " (uncompressed), more than the memory budget (",
                                                     kMemoryBudgetFlag, ")"));
    }
    out.append(chunk.data(), chunk.size());
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return out;
}

}  // namespace pstrain
