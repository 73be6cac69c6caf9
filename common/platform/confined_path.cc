#include "common/platform/confined_path.h"

#include <sys/stat.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
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

namespace {

// ckpt-<digits>, optionally followed by .tmp-<digits>.
bool IsCheckpointDirName(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "ckpt-")) return false;
  auto digits = [](absl::string_view* s) {
    size_t n = 0;
    while (n < s->size() && absl::ascii_isdigit(static_cast<unsigned char>((*s)[n]))) ++n;
    s->remove_prefix(n);
    return n > 0 && n <= 19;
  };
  if (!digits(&name)) return false;
  if (name.empty()) return true;
  return absl::ConsumePrefix(&name, ".tmp-") && digits(&name) && name.empty();
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  return (ec ? std::filesystem::path(path) : p).lexically_normal().string();
}

}  // namespace

absl::Status CheckCheckpointDir(const std::string& root, const std::string& dir) {
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint directory ", QuotedExcerpt(dir), " ", why, root.empty() ? "" : absl::StrCat(" (--checkpoint_root=", root, ")"),
        "; a ps writes and reads checkpoints only in ckpt-<step> directories", root.empty() ? "" : " inside its root"));
  };
  if (dir.empty() || dir.find('\0') != std::string::npos) return refuse("is empty or holds a NUL byte");
  for (absl::string_view part : absl::StrSplit(dir, '/')) {
    if (part == "." || part == "..") return refuse("has a \".\" or \"..\" component");
  }
  std::string last = std::filesystem::path(dir).lexically_normal().filename().string();
  if (last.empty()) last = std::filesystem::path(dir).lexically_normal().parent_path().filename().string();
  if (!IsCheckpointDirName(last)) return refuse("is not named ckpt-<step>");
  if (root.empty()) return absl::OkStatus();
  const std::filesystem::path abs_root(Absolute(root)), abs_dir(Absolute(dir));
  const std::filesystem::path rel = abs_dir.lexically_relative(abs_root);
  if (rel.empty() || *rel.begin() == ".." || rel == ".") return refuse("is outside the checkpoint root");
  // No symlink below the root leads elsewhere (the root itself may be one: the operator chose it).
  std::filesystem::path at = abs_root;
  for (const std::filesystem::path& part : rel) {
    at /= part;
    struct stat st;
    if (::lstat(at.c_str(), &st) != 0) break;  // what is missing is created by the ps, as a directory
    if (S_ISLNK(st.st_mode)) return refuse(absl::StrCat("passes through the symlink ", at.string()));
  }
  return absl::OkStatus();
}

}  // namespace pstrain
