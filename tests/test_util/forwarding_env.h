// ForwardingEnv: an Env that forwards every call to Env::Default(); tests derive from it and
// override only what they fake (the clock, one file's contents, a failing rename).
// Thread-safety: as Env::Default(), unless a subclass adds state.
#ifndef PSTRAIN_TESTS_TEST_UTIL_FORWARDING_ENV_H_
#define PSTRAIN_TESTS_TEST_UTIL_FORWARDING_ENV_H_

#include <string>
#include <vector>

#include "common/platform/env.h"

namespace pstrain {

class ForwardingEnv : public Env {
 public:
  int64_t NowMicros() override { return Env::Default()->NowMicros(); }
  void SleepForMicros(int64_t micros) override { Env::Default()->SleepForMicros(micros); }
  std::string GetEnvVar(const std::string& name) override { return Env::Default()->GetEnvVar(name); }
  absl::Status WriteFileAtomic(const std::string& p, absl::string_view d) override {
    return Env::Default()->WriteFileAtomic(p, d);
  }
  absl::StatusOr<std::string> ReadFile(const std::string& p) override { return Env::Default()->ReadFile(p); }
  absl::StatusOr<std::string> ReadRegularFile(const std::string& p, int64_t max_bytes) override {
    return Env::Default()->ReadRegularFile(p, max_bytes);
  }
  absl::Status WriteFileAtomicParts(const std::string& p, absl::Span<const absl::string_view> parts) override {
    return Env::Default()->WriteFileAtomicParts(p, parts);
  }
  absl::Status ReadFileRange(const std::string& p, uint64_t offset, size_t n, char* dst) override {
    return Env::Default()->ReadFileRange(p, offset, n, dst);
  }
  absl::StatusOr<uint64_t> FileSize(const std::string& p) override { return Env::Default()->FileSize(p); }
  bool FileExists(const std::string& p) override { return Env::Default()->FileExists(p); }
  absl::Status CreateDirs(const std::string& p) override { return Env::Default()->CreateDirs(p); }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& p) override {
    return Env::Default()->ListDir(p);
  }
  absl::Status Rename(const std::string& a, const std::string& b) override { return Env::Default()->Rename(a, b); }
  absl::Status RemoveAll(const std::string& p) override { return Env::Default()->RemoveAll(p); }
  absl::Status SyncDir(const std::string& p) override { return Env::Default()->SyncDir(p); }
};

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_TEST_UTIL_FORWARDING_ENV_H_
