// Env's default implementations of the piecewise file operations, over its whole-file ones (for
// fakes in tests; the POSIX Env reads and writes pieces directly).
#include "common/platform/env.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace pstrain {

absl::Status Env::WriteFileAtomicParts(const std::string& path, absl::Span<const absl::string_view> parts) {
  std::string joined;
  for (absl::string_view p : parts) joined.append(p.data(), p.size());
  return WriteFileAtomic(path, joined);
}

absl::Status Env::ReadFileRange(const std::string& path, uint64_t offset, size_t n, char* dst) {
  absl::StatusOr<std::string> data = ReadFile(path);
  if (!data.ok()) return data.status();
  if (offset > data->size() || n > data->size() - offset) {
    return absl::DataLossError(
        absl::StrCat(path, " holds ", data->size(), " bytes; bytes [", offset, ", ", offset + n, ") were asked for"));
  }
  if (n > 0) std::memcpy(dst, data->data() + offset, n);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Env::FileSize(const std::string& path) {
  absl::StatusOr<std::string> data = ReadFile(path);
  if (!data.ok()) return data.status();
  return static_cast<uint64_t>(data->size());
}

absl::StatusOr<std::unique_ptr<FileLock>> Env::LockFile(const std::string& path, absl::string_view owner) {
  (void)owner;
  return absl::UnimplementedError(absl::StrCat("this Env cannot lock files (", path, ")"));
}

}  // namespace pstrain
