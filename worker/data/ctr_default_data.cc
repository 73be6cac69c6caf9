#include "worker/data/ctr_default_data.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

// An exclusive flock(2) on a file, released when destroyed (or when the process dies).
class DataDirLock {
 public:
  explicit DataDirLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) return;  // not supported here: go on unlocked (the rename keeps it correct)
    }
    locked_ = true;
  }
  ~DataDirLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;
  bool locked() const { return locked_; }

 private:
  int fd_ = -1;
  bool locked_ = false;
};

std::string TemporaryName(const std::string& final_dir) {
  const uint64_t now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const uint64_t thread = std::hash<std::thread::id>()(std::this_thread::get_id());
  return absl::StrCat(final_dir, ".tmp-", ::getpid(), "-", absl::Hex(now ^ thread));
}

// Removes the temporary directories of generators that died. Only called under the lock, when no
// other generator can be running.
void RemoveLeftovers(Env* env, const std::string& cache_dir) {
  absl::StatusOr<std::vector<std::string>> names = env->ListDir(cache_dir);
  if (!names.ok()) return;
  const std::string prefix = absl::StrCat(kDefaultCtrDataName, ".tmp-");
  for (const std::string& name : *names) {
    if (absl::StartsWith(name, prefix)) env->RemoveAll(absl::StrCat(cache_dir, "/", name)).IgnoreError();
  }
}

absl::Status CacheError(const absl::Status& status, const std::string& cache_dir) {
  return absl::Status(status.code(), absl::StrCat(status.message(), " (generating the default CTR data into cache ",
                                                  cache_dir, "; give a writable cache directory)"));
}

}  // namespace

std::string DefaultCacheDir(absl::string_view xdg_cache_home, absl::string_view home, int uid) {
  if (!xdg_cache_home.empty()) return absl::StrCat(xdg_cache_home, "/pstrain");
  if (!home.empty()) return absl::StrCat(home, "/.cache/pstrain");
  return absl::StrCat("/tmp/pstrain-cache-", uid);
}

std::string DefaultCacheDirFromEnvironment(Env* env) {
  return DefaultCacheDir(env->GetEnvVar("XDG_CACHE_HOME"), env->GetEnvVar("HOME"), static_cast<int>(::getuid()));
}

absl::StatusOr<CtrSyntheticSummary> EnsureDefaultCtrData(Env* env, const std::string& cache_dir) {
  const std::string final_dir = absl::StrCat(cache_dir, "/", kDefaultCtrDataName);
  absl::StatusOr<CtrSyntheticSummary> ready = ReadCtrSyntheticSummary(env, final_dir);
  if (ready.ok()) return ready;
  absl::Status created = env->CreateDirs(cache_dir);
  if (!created.ok()) return CacheError(created, cache_dir);
  const DataDirLock lock(absl::StrCat(final_dir, ".lock"));
  ready = ReadCtrSyntheticSummary(env, final_dir);  // another process may have made it meanwhile
  if (ready.ok()) return ready;
  if (lock.locked()) {
    RemoveLeftovers(env, cache_dir);
    // A directory without its bayes.json is no complete set (e.g. a file was deleted by hand).
    env->RemoveAll(final_dir).IgnoreError();
  }
  const std::string temporary = TemporaryName(final_dir);
  absl::StatusOr<CtrSyntheticSummary> written = WriteCtrSyntheticSet(env, CtrSyntheticOptions(), temporary);
  if (!written.ok()) {
    env->RemoveAll(temporary).IgnoreError();
    return CacheError(written.status(), cache_dir);
  }
  absl::Status renamed = env->Rename(temporary, final_dir);
  if (!renamed.ok()) {
    env->RemoveAll(temporary).IgnoreError();
    ready = ReadCtrSyntheticSummary(env, final_dir);  // lost the race to another generator: use its set
    if (ready.ok()) return ready;
    return CacheError(renamed, cache_dir);
  }
  return ReadCtrSyntheticSummary(env, final_dir);
}

}  // namespace pstrain
