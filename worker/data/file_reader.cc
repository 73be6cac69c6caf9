#include "worker/data/file_reader.h"

#include <sys/stat.h>
#include <unistd.h>
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
#include "common/platform/file_rules.h"

namespace pstrain {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

bool IsDirectory(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

}  // namespace

absl::Status ReadMaybeGzipFileInChunks(const std::string& path, size_t chunk_bytes,
                                       const std::function<absl::Status(absl::string_view)>& consume) {
  // file_rules.h: a regular file (symlinks followed); a FIFO, device or directory is refused
  // without blocking. The size limit is the caller's, counted on the decompressed bytes.
  static constexpr FileRules kDataFile{"data file", INT64_MAX, true, kMaxDataLineBytes};
  absl::StatusOr<int> fd = OpenRegularFileForReading(path, kDataFile, nullptr);
  if (!fd.ok()) {
    if (fd.status().code() == absl::StatusCode::kInvalidArgument && IsDirectory(path)) {
      return absl::InvalidArgumentError(absl::StrCat("data file ", path, " is a directory; give the file(s) in it"));
    }
    return fd.status();
  }
  std::unique_ptr<gzFile_s, GzCloser> file(gzdopen(*fd, "rb"));
  if (file == nullptr) {
    ::close(*fd);
    return absl::InternalError(absl::StrCat("cannot read data file ", path, ": out of memory for zlib"));
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
                                                     kMemoryBudgetFlag, "); stopped while reading"));
    }
    out.append(chunk.data(), chunk.size());
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return out;
}

}  // namespace pstrain
