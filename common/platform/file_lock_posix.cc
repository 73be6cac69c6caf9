#include "common/platform/file_lock_posix.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace pstrain {
namespace {

// What an owner may write: a line or two, never a file's worth.
constexpr size_t kMaxOwnerBytes = 1024;

class PosixFileLock : public FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override { ::close(fd_); }  // closing the last descriptor drops the flock
  PosixFileLock(const PosixFileLock&) = delete;
  PosixFileLock& operator=(const PosixFileLock&) = delete;

 private:
  const int fd_;
};

// The owner the holder wrote (at most kMaxOwnerBytes, printable characters only: it is echoed).
std::string ReadOwner(int fd) {
  char buf[kMaxOwnerBytes];
  const ssize_t n = ::pread(fd, buf, sizeof(buf), 0);
  if (n <= 0) return "an owner that has not written its name yet";
  std::string owner(buf, static_cast<size_t>(n));
  for (char& c : owner) {
    if (!absl::ascii_isprint(static_cast<unsigned char>(c))) c = ' ';
  }
  return std::string(absl::StripAsciiWhitespace(owner));
}

absl::Status WriteOwner(int fd, const std::string& path, absl::string_view owner) {
  if (::ftruncate(fd, 0) != 0) return absl::InternalError(absl::StrCat("cannot truncate ", path, ": ", std::strerror(errno)));
  const std::string text = absl::StrCat(owner.substr(0, kMaxOwnerBytes - 1), "\n");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<FileLock>> LockFilePosix(const std::string& path, absl::string_view owner) {
  // O_NOFOLLOW and O_NONBLOCK: a symlink planted at the lock's name is not followed, a FIFO not waited on.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == ELOOP) return absl::InvalidArgumentError(absl::StrCat(path, " is a symlink; remove it"));
    return absl::InternalError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file; remove it"));
  }
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    std::string message = err == EWOULDBLOCK
                              ? absl::StrCat(path, " is held by ", ReadOwner(fd))
                              : absl::StrCat("cannot lock ", path, ": ", std::strerror(err));
    ::close(fd);
    if (err == EWOULDBLOCK) return absl::FailedPreconditionError(message);
    return absl::InternalError(message);
  }
  auto lock = std::make_unique<PosixFileLock>(fd);
  absl::Status written = WriteOwner(fd, path, owner);
  if (!written.ok()) return written;  // `lock` closes the descriptor
  return std::unique_ptr<FileLock>(std::move(lock));
}

}  // namespace pstrain
