// Env::Default(): the POSIX implementation.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/platform/env.h"
#include "common/platform/file_lock_posix.h"
#include "common/platform/file_rules.h"

namespace pstrain {
namespace {

absl::Status ErrnoError(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status FsyncPath(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) return ErrnoError("cannot open for fsync", path);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return ErrnoError("fsync failed on", path);
  return absl::OkStatus();
}

std::string ParentDir(const std::string& path) {
  std::filesystem::path p(path);
  std::string parent = p.parent_path().string();
  return parent.empty() ? "." : parent;
}

// Opens `path` for reading only when it is a regular file itself (file_rules.h, no symlink
// followed): a checkpoint's files. The descriptor, to be closed by the caller; its size goes to
// `size`.
absl::StatusOr<int> OpenRegularFile(const std::string& path, int64_t* size) {
  static constexpr FileRules kCheckpointFile{"checkpoint file", INT64_MAX, false, 0};
  return OpenRegularFileForReading(path, kCheckpointFile, size);
}

// Reads exactly `n` bytes at `offset` of the open `fd` into `dst`. DataLoss when the file ends
// first; Internal on read errors.
absl::Status ReadAt(int fd, const std::string& path, uint64_t offset, size_t n, char* dst) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, dst + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoError("read error on", path);
    if (r == 0) {
      return absl::DataLossError(absl::StrCat(path, " ends at byte ", offset + done, "; bytes [", offset, ", ",
                                              offset + n, ") were asked for"));
    }
    done += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

class PosixEnv : public Env {
 public:
  int64_t NowMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  void SleepForMicros(int64_t micros) override { std::this_thread::sleep_for(std::chrono::microseconds(micros)); }

  std::string GetEnvVar(const std::string& name) override {
    const char* value = std::getenv(name.c_str());
    return value == nullptr ? "" : value;
  }

  absl::Status WriteFileAtomic(const std::string& path, absl::string_view data) override {
    return WriteFileAtomicParts(path, {data});
  }

  absl::Status WriteFileAtomicParts(const std::string& path, absl::Span<const absl::string_view> parts) override {
    const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoError("cannot create", tmp);
    for (absl::string_view data : parts) {
      size_t done = 0;
      while (done < data.size()) {
        ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0) {
          if (errno == EINTR) continue;
          absl::Status s = ErrnoError("write failed on", tmp);
          ::close(fd);
          ::unlink(tmp.c_str());
          return s;
        }
        done += static_cast<size_t>(n);
      }
    }
    if (::fsync(fd) != 0) {
      absl::Status s = ErrnoError("fsync failed on", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    ::close(fd);
    return Rename(tmp, path);
  }

  absl::StatusOr<std::string> ReadFile(const std::string& path) override { return ReadFileWithRules(path, kSmallFile); }

  absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes) override {
    int64_t size = 0;
    absl::StatusOr<int> fd = OpenRegularFile(path, &size);
    if (!fd.ok()) return fd.status();
    absl::Status refused;
    if (size > max_bytes) {
      refused = absl::OutOfRangeError(absl::StrCat(path, " holds ", size, " bytes, more than the ", max_bytes, " it may"));
    }
    std::string data;
    if (refused.ok()) {
      data.resize(static_cast<size_t>(size));
      refused = ReadAt(*fd, path, 0, data.size(), data.data());
    }
    ::close(*fd);
    if (!refused.ok()) return refused;
    return data;
  }

  absl::Status ReadFileRange(const std::string& path, uint64_t offset, size_t n, char* dst) override {
    int64_t size = 0;
    absl::StatusOr<int> fd = OpenRegularFile(path, &size);
    if (!fd.ok()) return fd.status();
    absl::Status s = ReadAt(*fd, path, offset, n, dst);
    ::close(*fd);
    return s;
  }

  absl::StatusOr<uint64_t> FileSize(const std::string& path) override {
    int64_t size = 0;
    absl::StatusOr<int> fd = OpenRegularFile(path, &size);
    if (!fd.ok()) return fd.status();
    ::close(*fd);
    return static_cast<uint64_t>(size);
  }

  bool FileExists(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }

  absl::Status CreateDirs(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return absl::InternalError(absl::StrCat("cannot create directory ", path, ": ", ec.message()));
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    std::error_code ec;
    std::vector<std::string> names;
    for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      names.push_back(it->path().filename().string());
    }
    if (ec) return absl::NotFoundError(absl::StrCat("cannot list directory ", path, ": ", ec.message()));
    std::sort(names.begin(), names.end());
    return names;
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoError(absl::StrCat("cannot rename ", from, " to"), to);
    return SyncDir(ParentDir(to));
  }

  absl::Status RemoveAll(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return absl::InternalError(absl::StrCat("cannot remove ", path, ": ", ec.message()));
    return absl::OkStatus();
  }

  absl::Status SyncDir(const std::string& path) override { return FsyncPath(path, O_RDONLY | O_DIRECTORY); }

  absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path, absl::string_view owner) override {
    return LockFilePosix(path, owner);
  }
};

}  // namespace

Env* Env::Default() {
  static Env* env = new PosixEnv;  // never destroyed: used until exit by every thread
  return env;
}

}  // namespace pstrain
