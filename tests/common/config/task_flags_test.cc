// The task binaries' command lines (class: processes and flags): every bad argument is found
// before absl parses (absl would exit 1; pstrain's contract for a bad configuration is 2).
#include "common/config/task_flags.h"

#include <vector>

#include "absl/flags/flag.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(int64_t, test_steps, 0, "a test flag");
ABSL_FLAG(bool, test_restore, true, "a test flag");
ABSL_FLAG(std::string, test_job, "", "a test flag");

namespace pstrain {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::set<std::string>> Check(std::vector<std::string> args) {
  args.insert(args.begin(), "pstrain-test");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return CheckTaskFlags(static_cast<int>(argv.size()), argv.data());
}

TEST(TaskFlagsTest, BadArgumentsAreNamed) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"--bogus=1"}, "unknown flag \"--bogus=1\""},
      {{"--test_stesp=5"}, "unknown flag"},
      {{"--test_steps=many"}, "flag --test_steps=\"many\" is not a valid value"},
      {{"--test_steps=99999999999999999999"}, "is not a valid value"},
      {{"--test_restore=maybe"}, "is not a valid true/false"},
      {{"--test_steps"}, "flag --test_steps needs a value"},
      {{"cnn"}, "unexpected argument \"cnn\""},
      {{"--test_job=x", "--", "extra"}, "unexpected argument \"extra\""},
      {{"--notest_job"}, "unknown flag"},  // --no only negates booleans
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::set<std::string>> r = Check(c.args);
    ASSERT_FALSE(r.ok()) << c.args[0];
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message)) << c.args[0];
  }
}

TEST(TaskFlagsTest, GoodArgumentsAreAcceptedAndNamed) {
  absl::StatusOr<std::set<std::string>> r =
      Check({"--test_steps", "-5", "-test_job=cnn", "--notest_restore", "--"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, (std::set<std::string>{"test_steps", "test_job", "test_restore"}));
  EXPECT_TRUE(Check({})->empty());
}

}  // namespace
}  // namespace pstrain
