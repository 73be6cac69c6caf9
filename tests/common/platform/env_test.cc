#include "common/platform/env.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace pstrain {
namespace {

TEST(EnvTest, AtomicWriteReadListRemove) {
  char tmpl[] = "/tmp/pstrain_env_test_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirs(dir + "/a/b").ok());
  ASSERT_TRUE(env->WriteFileAtomic(dir + "/a/b/f", "hello").ok());
  ASSERT_TRUE(env->WriteFileAtomic(dir + "/a/b/f", "world!").ok());  // replaces, no temp left behind
  EXPECT_EQ(*env->ReadFile(dir + "/a/b/f"), "world!");
  EXPECT_EQ(*env->ListDir(dir + "/a/b"), (std::vector<std::string>{"f"}));
  EXPECT_EQ(env->ReadFile(dir + "/missing").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(env->Rename(dir + "/a/b", dir + "/c").ok());
  EXPECT_TRUE(env->FileExists(dir + "/c/f"));
  ASSERT_TRUE(env->RemoveAll(dir).ok());
  EXPECT_FALSE(env->FileExists(dir));
}

}  // namespace
}  // namespace pstrain
