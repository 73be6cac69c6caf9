#include "common/platform/confined_path.h"

#include "absl/strings/str_cat.h"
#include "common/config/json_util.h"

namespace pstrain {

absl::Status CheckPlainFileName(absl::string_view name, absl::string_view what) {
  const char* why = nullptr;
  if (name.empty()) {
    why = "is empty";
  } else if (name.size() > 255) {
    why = "is longer than a file name may be";
  } else if (name == "." || name == "..") {
    why = "names a directory";
  } else if (name.find('/') != absl::string_view::npos) {
    why = name.front() == '/' ? "is an absolute path" : "is a path, not a file name";
  } else if (name.find('\0') != absl::string_view::npos) {
    why = "holds a NUL byte";
  }
  if (why == nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " ", QuotedExcerpt(name), " ", why,
                                                 "; only a plain file name inside its directory is allowed"));
}

absl::StatusOr<std::string> PathInDir(const std::string& dir, absl::string_view name, absl::string_view what) {
  absl::Status s = CheckPlainFileName(name, what);
  if (!s.ok()) return s;
  return absl::StrCat(dir, "/", name);
}

}  // namespace pstrain
