// Paths read from files (class: paths outside the model dir): a name from a checkpoint's index is
// one plain component, and Env::ReadRegularFile follows no symlink, opens no FIFO or device for
// reading, and reads nothing larger than it was told to expect.
#include "common/platform/confined_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/platform/env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

TEST(ConfinedPathTest, OnlyPlainNamesStayInTheirDirectory) {
  const std::string refused[] = {"", ".", "..", "../index.json", "../../etc/passwd", "/etc/passwd", "a/b",
                                 std::string("x\0y", 3), std::string(300, 'n')};
  for (const std::string& name : refused) {
    absl::StatusOr<std::string> p = PathInDir("/ckpt", name, "shards[0].file");
    ASSERT_FALSE(p.ok()) << name;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr("shards[0].file"));
  }
  EXPECT_THAT(std::string(CheckPlainFileName("/etc/passwd", "f").message()), HasSubstr("absolute path"));
  EXPECT_EQ(*PathInDir("/ckpt", "dense%2Fkernel.shard", "f"), "/ckpt/dense%2Fkernel.shard");
  EXPECT_TRUE(CheckPlainFileName("..shard", "f").ok());  // dots inside a name are fine
}

class ReadRegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/confined_path_test_", ::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/secret") << "outside the checkpoint";
    std::ofstream(dir_ + "/plain") << "12345678";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ReadRegularFileTest, RefusesSymlinksFifosDirectoriesAndLargerFiles) {
  Env* env = Env::Default();
  EXPECT_EQ(*env->ReadRegularFile(dir_ + "/plain", 8), "12345678");
  std::filesystem::create_symlink(dir_ + "/secret", dir_ + "/link");
  std::filesystem::create_symlink("/dev/zero", dir_ + "/zero");
  ASSERT_EQ(::mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  struct Case {
    std::string name;
    int64_t max;
    const char* message;
  };
  const Case cases[] = {{"link", 100, "is a symlink"},
                        {"zero", 100, "is a symlink"},
                        {"fifo", 100, "not a regular file"},  // would block forever if opened for reading
                        {".", 100, "not a regular file"},
                        {"plain", 7, "holds 8 bytes, more than the 7"},
                        {"missing", 100, "does not exist"}};
  for (const Case& c : cases) {
    absl::StatusOr<std::string> data = env->ReadRegularFile(dir_ + "/" + c.name, c.max);
    ASSERT_FALSE(data.ok()) << c.name;
    EXPECT_THAT(std::string(data.status().message()), HasSubstr(c.message)) << c.name;
  }
  EXPECT_EQ(env->ReadRegularFile(dir_ + "/missing", 1).status().code(), absl::StatusCode::kNotFound);
}

// A ps's Save and Restore: a peer names the directory; only ckpt-<step> directories inside the
// ps's checkpoint root, reached without "..", are written or read.
TEST(ConfinedPathTest, CheckpointDirsStayInsideTheRoot) {
  const std::string root = absl::StrCat(::testing::TempDir(), "/confined_root_", ::getpid());
  std::filesystem::create_directories(root + "/model");
  EXPECT_TRUE(CheckCheckpointDir(root, root + "/model/ckpt-20.tmp-123").ok());
  EXPECT_TRUE(CheckCheckpointDir(root, root + "/model/ckpt-20").ok());
  EXPECT_TRUE(CheckCheckpointDir("", "/anywhere/ckpt-7").ok());  // no root: the name rule only
  const std::string refused[] = {root + "/../ckpt-1",        root + "/model/../../ckpt-1", "/etc/ckpt-1",
                                 root + "/model/evil",        root + "/model/ckpt-1/..",    root + "/model/ckpt-x",
                                 root + "/model/./ckpt-1",    ""};
  for (const std::string& dir : refused) {
    absl::Status s = CheckCheckpointDir(root, dir);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << dir;
  }
  EXPECT_THAT(std::string(CheckCheckpointDir(root, "/etc/ckpt-1").message()), HasSubstr("outside the checkpoint root"));
  EXPECT_FALSE(CheckCheckpointDir("", "/tmp/../etc/ckpt-1").ok());
  EXPECT_FALSE(CheckCheckpointDir("", "/etc/cron.d").ok());
  // A symlink below the root that leads elsewhere is refused.
  const std::string outside = root + "-outside";
  std::filesystem::create_directories(outside);
  ::unlink((root + "/escape").c_str());
  ASSERT_EQ(::symlink(outside.c_str(), (root + "/escape").c_str()), 0);
  EXPECT_THAT(std::string(CheckCheckpointDir(root, root + "/escape/ckpt-1").message()),
              HasSubstr("passes through the symlink"));
}

}  // namespace
}  // namespace pstrain
