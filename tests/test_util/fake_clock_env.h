// FakeClockEnv: an Env whose clock moves only when a test moves it (files are the real ones), so
// timeouts are tested without sleeping through them.
// Thread-safety: thread-safe.
#ifndef PSTRAIN_TESTS_TEST_UTIL_FAKE_CLOCK_ENV_H_
#define PSTRAIN_TESTS_TEST_UTIL_FAKE_CLOCK_ENV_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/platform/env.h"

namespace pstrain {
namespace testing_util {

class FakeClockEnv : public Env {
 public:
  int64_t NowMicros() override { return now_.load(); }
  void SleepForMicros(int64_t micros) override { now_ += micros; }
  void Advance(absl::Duration d) { now_ += absl::ToInt64Microseconds(d); }
  std::string GetEnvVar(const std::string& name) override { return Env::Default()->GetEnvVar(name); }

  absl::Status WriteFileAtomic(const std::string& p, absl::string_view d) override {
    return Env::Default()->WriteFileAtomic(p, d);
  }
  absl::StatusOr<std::string> ReadFile(const std::string& p) override { return Env::Default()->ReadFile(p); }
  absl::StatusOr<std::string> ReadRegularFile(const std::string& p, int64_t max_bytes) override {
    return Env::Default()->ReadRegularFile(p, max_bytes);
  }
  bool FileExists(const std::string& p) override { return Env::Default()->FileExists(p); }
  absl::Status CreateDirs(const std::string& p) override { return Env::Default()->CreateDirs(p); }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& p) override { return Env::Default()->ListDir(p); }
  absl::Status Rename(const std::string& a, const std::string& b) override { return Env::Default()->Rename(a, b); }
  absl::Status RemoveAll(const std::string& p) override { return Env::Default()->RemoveAll(p); }
  absl::Status SyncDir(const std::string& p) override { return Env::Default()->SyncDir(p); }

 private:
  std::atomic<int64_t> now_{int64_t{1} << 40};
};

}  // namespace testing_util
}  // namespace pstrain

#endif  // PSTRAIN_TESTS_TEST_UTIL_FAKE_CLOCK_ENV_H_
