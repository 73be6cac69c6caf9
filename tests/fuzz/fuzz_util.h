// Helpers for the libFuzzer targets: a per-process scratch directory for the inputs of readers that
// take file names, and a check that traps (so libFuzzer reports the input) when it fails.
// Thread-safety: one fuzzing thread.
#ifndef PSTRAIN_TESTS_FUZZ_FUZZ_UTIL_H_
#define PSTRAIN_TESTS_FUZZ_FUZZ_UTIL_H_

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/strings/string_view.h"

namespace pstrain {
namespace fuzz {

inline void Check(bool condition) {
  if (!condition) __builtin_trap();
}

// A directory of this process's own, removed at exit.
inline const std::string& ScratchDir() {
  static const std::string* dir = [] {
    auto* d = new std::string(std::filesystem::temp_directory_path().string() + "/pstrain-fuzz-" +
                              std::to_string(::getpid()));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::filesystem::remove_all(std::filesystem::temp_directory_path().string() + "/pstrain-fuzz-" +
                                  std::to_string(::getpid()));
    });
    return d;
  }();
  return *dir;
}

// Writes `data` to ScratchDir()/name and returns the path.
inline std::string WriteScratch(const std::string& name, absl::string_view data) {
  const std::string path = ScratchDir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f != nullptr) {
    std::fwrite(data.data(), 1, data.size(), f);
    std::fclose(f);
  }
  return path;
}

// Splits `data` at the first occurrence of `separator` (a seed's way to hold two files).
inline std::pair<absl::string_view, absl::string_view> SplitInput(absl::string_view data, absl::string_view separator) {
  const size_t at = data.find(separator);
  if (at == absl::string_view::npos) return {data, absl::string_view()};
  return {data.substr(0, at), data.substr(at + separator.size())};
}

}  // namespace fuzz
}  // namespace pstrain

#endif  // PSTRAIN_TESTS_FUZZ_FUZZ_UTIL_H_
