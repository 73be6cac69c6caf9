// Runs the real `pstrain datagen ctr` as a user would: the files and figures it prints, the same
// bytes for the same seed, and exit code 2 with a message for bad flags.
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/platform/env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util/run_command.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::RunCommand;

std::string Datagen(const std::string& flags) { return absl::StrCat(PSTRAIN_BIN_DIR, "/pstrain datagen ", flags); }

// The file's bytes, "" when it cannot be read.
std::string Slurp(const std::string& path) { return Env::Default()->ReadFile(path).value_or(""); }

TEST(DatagenCommandTest, WritesTheSetAndPrintsTheBayesFigures) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/datagen_command");
  std::filesystem::remove_all(dir);
  auto first =
      RunCommand(Datagen("ctr --out " + dir + "/a --train 2000 --test 1000 --seed 3 --vocabulary 5000 --zipf 1.2"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_THAT(first.output, HasSubstr("train: 2000 examples"));
  EXPECT_THAT(first.output, HasSubstr("Bayes-optimal test AUC 0."));
  auto second =
      RunCommand(Datagen("ctr --out=" + dir + "/b --train=2000 --test=1000 --seed=3 --vocabulary=5000 --zipf=1.2"));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  for (const char* file : {"train.txt", "test.txt", "bayes.json"}) {
    const std::string a = Slurp(absl::StrCat(dir, "/a/", file));
    EXPECT_FALSE(a.empty()) << file;
    EXPECT_EQ(a, Slurp(absl::StrCat(dir, "/b/", file))) << file;
  }
  EXPECT_THAT(Slurp(dir + "/a/bayes.json"), HasSubstr("\"vocabulary\": 5000"));
}

TEST(DatagenCommandTest, BadFlagsExitTwoWithAMessage) {
  const std::string out = absl::StrCat(::testing::TempDir(), "/datagen_bad");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "usage: pstrain datagen ctr"},
      {"images --out " + out, "ctr is the only kind"},
      {"ctr", "give --out=DIR"},
      {"ctr --out " + out + " --zipf -1", "--zipf must be in (0, 10]"},
      {"ctr --out " + out + " --train lots", "--train=lots is not an integer"},
      {"ctr --out " + out + " --vocabulary 0", "--vocabulary must be in 1.."},
      {"ctr --default --seed 3", "--seed does not apply to --default"},
      {"ctr --out " + out + " --colour red", "unknown flag --colour"},
  };
  for (const auto& [flags, message] : cases) {
    auto r = RunCommand(Datagen(flags));
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(message)) << flags;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  auto help = RunCommand(Datagen("--help"));
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.output, HasSubstr("--vocabulary"));
}

}  // namespace
}  // namespace pstrain
