// Runs a shell command as a user would and captures its exit code and output, for tests of the
// real binaries.
// Thread-safety: free function, no shared state.
#ifndef PSTRAIN_TESTS_TEST_UTIL_RUN_COMMAND_H_
#define PSTRAIN_TESTS_TEST_UTIL_RUN_COMMAND_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace pstrain {
namespace testing_util {

struct CommandResult {
  int exit_code = -1;  // -1 when the command could not run or was killed by a signal
  std::string output;  // stdout and stderr together
};

inline CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace testing_util
}  // namespace pstrain

#endif  // PSTRAIN_TESTS_TEST_UTIL_RUN_COMMAND_H_
