// Files for the data readers' tests: a fresh folder per test and plain or gzip files in it.
// Thread-safety: plain functions, for one test at a time.
#ifndef PSTRAIN_TESTS_WORKER_DATA_DATA_FILES_H_
#define PSTRAIN_TESTS_WORKER_DATA_DATA_FILES_H_

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace pstrain {

// An empty folder named after `prefix` and the running test.
inline std::string TestDir(const std::string& prefix) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/", prefix, "_",
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Writes `bytes` to `path`, gzip-compressed when `gzip`; a failed write fails the test.
inline void WriteFile(const std::string& path, const std::string& bytes, bool gzip = false) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
}

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_WORKER_DATA_DATA_FILES_H_
