#include "common/platform/file_rules.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace pstrain {
namespace {

const char* TypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Closes `fd` when the value goes out of scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

absl::StatusOr<int> OpenRegularFileForReading(const std::string& path, const FileRules& rules, int64_t* size) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused after fstat.
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (rules.follow_symlinks ? 0 : O_NOFOLLOW);
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(rules.kind, " ", path, " does not exist"));
    if (err == ELOOP && !rules.follow_symlinks) {
      return absl::InvalidArgumentError(absl::StrCat(path, " is a symlink; it is not followed (", rules.kind,
                                                     "s are read only as regular files)"));
    }
    // Unreadable (permissions, a missing directory on the path): as missing, a configuration error.
    return absl::NotFoundError(absl::StrCat("cannot open ", rules.kind, " ", path, ": ", std::strerror(err)));
  }
  FdCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return absl::InternalError(absl::StrCat("cannot stat ", rules.kind, " ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(rules.kind, " ", path, " is ", TypeName(st.st_mode),
                                                   ", not a regular file; give a regular file"));
  }
  // Reads block again: a regular file never waits, and callers may hand the descriptor on.
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
    return absl::InternalError(absl::StrCat("cannot set up ", path, ": ", std::strerror(errno)));
  }
  if (size != nullptr) *size = static_cast<int64_t>(st.st_size);
  closer.fd = -1;
  return fd;
}

absl::Status CheckLineLength(const std::string& path, const FileRules& rules, int64_t line, int64_t length) {
  if (rules.max_line_bytes <= 0 || length <= rules.max_line_bytes) return absl::OkStatus();
  return absl::OutOfRangeError(absl::StrCat(rules.kind, " ", path, ": line ", line, " is longer than ",
                                            rules.max_line_bytes, " bytes, the most a line may hold"));
}

namespace {

absl::Status TooLarge(const std::string& path, const FileRules& rules) {
  return absl::OutOfRangeError(absl::StrCat(rules.kind, " ", path, " holds more than ", rules.max_bytes,
                                            " bytes, the most a ", rules.kind, " may hold"));
}

// Reads `fd` in pieces, calling `piece_fn` with each; stops past rules.max_bytes.
absl::Status ReadPieces(int fd, const std::string& path, const FileRules& rules,
                        const std::function<absl::Status(absl::string_view)>& piece_fn) {
  char buffer[1 << 16];
  int64_t total = 0;
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("read error on ", rules.kind, " ", path, ": ", std::strerror(errno)));
    if (n == 0) return absl::OkStatus();
    total += n;
    if (total > rules.max_bytes) return TooLarge(path, rules);
    absl::Status s = piece_fn(absl::string_view(buffer, static_cast<size_t>(n)));
    if (!s.ok()) return s;
  }
}

}  // namespace

absl::StatusOr<std::string> ReadFileWithRules(const std::string& path, const FileRules& rules) {
  int64_t size = 0;
  absl::StatusOr<int> fd = OpenRegularFileForReading(path, rules, &size);
  if (!fd.ok()) return fd.status();
  FdCloser closer{*fd};
  if (size > rules.max_bytes) return TooLarge(path, rules);
  std::string out;
  out.reserve(static_cast<size_t>(size));  // /proc files say 0: read to the end regardless
  absl::Status s = ReadPieces(*fd, path, rules, [&out](absl::string_view piece) {
    out.append(piece.data(), piece.size());
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::Status ForEachLineWithRules(const std::string& path, const FileRules& rules,
                                  const std::function<absl::Status(int64_t, absl::string_view)>& line_fn) {
  int64_t size = 0;
  absl::StatusOr<int> fd = OpenRegularFileForReading(path, rules, &size);
  if (!fd.ok()) return fd.status();
  FdCloser closer{*fd};
  if (size > rules.max_bytes) return TooLarge(path, rules);
  std::string partial;  // the current line's bytes so far
  int64_t line = 0;
  absl::Status s = ReadPieces(*fd, path, rules, [&](absl::string_view piece) -> absl::Status {
    while (!piece.empty()) {
      const size_t nl = piece.find('\n');
      const absl::string_view head = piece.substr(0, nl);
      absl::Status length = CheckLineLength(path, rules, line + 1, static_cast<int64_t>(partial.size() + head.size()));
      if (!length.ok()) return length;
      if (nl == absl::string_view::npos) {
        partial.append(head.data(), head.size());
        return absl::OkStatus();
      }
      ++line;
      absl::Status s2;
      if (partial.empty()) {
        s2 = line_fn(line, head);
      } else {
        partial.append(head.data(), head.size());
        s2 = line_fn(line, partial);
        partial.clear();
      }
      if (!s2.ok()) return s2;
      piece.remove_prefix(nl + 1);
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  if (!partial.empty()) return line_fn(line + 1, partial);
  return absl::OkStatus();
}

}  // namespace pstrain
