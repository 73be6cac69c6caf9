// Files that are not regular or not small (file_rules.h): a FIFO, a device, a directory or a
// symlink where none is allowed is refused without blocking or reading; a file past its kind's
// size limit or a line past the line limit is refused while reading, naming the file and the
// limit. Also the resource errors a process reports instead of aborting (resource_errors.h).
#include "common/platform/file_rules.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <atomic>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config/json_util.h"
#include "common/platform/env.h"
#include "common/platform/resource_errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

std::string TestDir() {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/file_rules_", ::getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

constexpr FileRules kTiny{"test file", 10, true, 4};
constexpr FileRules kNoLinks{"test file", 100, false, 0};
constexpr FileRules kShortLines{"test file", 100, true, 4};

TEST(FileRulesBadInputTest, FifoDeviceAndDirectoryAreRefusedWithoutBlocking) {
  const std::string dir = TestDir();
  const std::string fifo = dir + "/fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);  // no writer: an open without O_NONBLOCK would wait forever
  struct Case {
    std::string path, says;
  } cases[] = {{fifo, "is a FIFO (named pipe), not a regular file"},
               {"/dev/zero", "is a character device, not a regular file"},
               {dir, "is a directory, not a regular file"}};
  for (const Case& c : cases) {
    absl::StatusOr<std::string> read = ReadFileWithRules(c.path, kJsonDocumentFile);
    ASSERT_FALSE(read.ok()) << c.path;
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(read.status().message()), HasSubstr(absl::StrCat("JSON file ", c.path, " ", c.says)));
    // Every reader through the same rules: a job spec, Env::ReadFile.
    EXPECT_FALSE(ReadJsonText(c.path).ok());
    EXPECT_EQ(Env::Default()->ReadFile(c.path).status().code(), absl::StatusCode::kInvalidArgument) << c.path;
  }
  // A symlink to /dev/zero is followed, and still refused.
  const std::string link = dir + "/zero-link";
  ::unlink(link.c_str());
  ASSERT_EQ(::symlink("/dev/zero", link.c_str()), 0);
  EXPECT_THAT(std::string(ReadFileWithRules(link, kJsonDocumentFile).status().message()),
              HasSubstr("is a character device"));
  // Where symlinks are not allowed, one to a regular file is refused too.
  const std::string target = dir + "/target";
  std::ofstream(target) << "x";
  const std::string link2 = dir + "/link";
  ::unlink(link2.c_str());
  ASSERT_EQ(::symlink(target.c_str(), link2.c_str()), 0);
  EXPECT_THAT(std::string(ReadFileWithRules(link2, kNoLinks).status().message()), HasSubstr("is a symlink"));
  EXPECT_TRUE(ReadFileWithRules(link2, kTiny).ok());
  EXPECT_EQ(ReadFileWithRules(dir + "/missing", kTiny).status().code(), absl::StatusCode::kNotFound);
}

TEST(FileRulesBadInputTest, SizeAndLineLimitsNameTheFileAndTheLimit) {
  const std::string dir = TestDir();
  const std::string big = dir + "/big";
  std::ofstream(big) << "0123456789A";  // 11 bytes, one over
  absl::StatusOr<std::string> read = ReadFileWithRules(big, kTiny);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("test file " + big + " holds more than 10 bytes"));
  // A file whose size says 0 (/proc) is still read to its end.
  EXPECT_TRUE(ReadFileWithRules("/proc/self/status", kSmallFile).ok());

  const std::string lines = dir + "/lines";
  std::ofstream(lines) << "ab\ncd\nefghi\n";
  std::vector<std::string> seen;
  absl::Status s = ForEachLineWithRules(lines, kShortLines, [&](int64_t n, absl::string_view line) {
    seen.push_back(absl::StrCat(n, ":", line));
    return absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(s.message()), HasSubstr("test file " + lines + ": line 3 is longer than 4 bytes"));
  EXPECT_EQ(seen, (std::vector<std::string>{"1:ab", "2:cd"}));

  const std::string ok = dir + "/ok";
  std::ofstream(ok) << "ab\n\ncd";  // a last line without '\n' counts
  seen.clear();
  ASSERT_TRUE(ForEachLineWithRules(ok, kShortLines, [&](int64_t n, absl::string_view line) {
                seen.push_back(absl::StrCat(n, ":", line));
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"1:ab", "2:", "3:cd"}));
}

TEST(ResourceErrorsBadInputTest, RunningOutIsNamedWithTheFix) {
  EXPECT_THAT(DescribeResourceError(std::bad_alloc()), HasSubstr("out of memory"));
  const std::system_error no_thread(std::make_error_code(std::errc::resource_unavailable_try_again), "thread");
  EXPECT_THAT(DescribeResourceError(no_thread), HasSubstr("cannot create a thread"));
  EXPECT_THAT(DescribeResourceError(no_thread), HasSubstr("ulimit -u"));
  // A group whose third thread cannot start stops and joins the two started, then rethrows.
  std::vector<std::thread> threads;
  std::atomic<bool> stop{false};
  EXPECT_THROW(StartThreadsOrStop(
                   &threads,
                   [&] {
                     for (int i = 0; i < 3; ++i) {
                       if (i == 2) throw no_thread;
                       threads.emplace_back([&stop] {
                         while (!stop.load()) std::this_thread::yield();
                       });
                     }
                   },
                   [&stop] { stop.store(true); }),
               std::system_error);
  EXPECT_TRUE(threads.empty());
}

}  // namespace
}  // namespace pstrain
