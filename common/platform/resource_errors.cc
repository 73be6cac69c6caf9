#include "common/platform/resource_errors.h"

#include <unistd.h>

#include <cstdlib>
#include <new>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/platform/exit_codes.h"

namespace pstrain {
namespace {

const char* g_binary = "pstrain";

void WriteAll(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

[[noreturn]] void OnTerminate() {
  std::exception_ptr current = std::current_exception();
  if (current != nullptr) {
    try {
      std::rethrow_exception(current);
    } catch (const std::bad_alloc& e) {
      WriteAll(absl::StrCat(g_binary, ": ", DescribeResourceError(e), "\n"));
      ::_exit(kExitRuntimeFailure);
    } catch (const std::system_error& e) {
      WriteAll(absl::StrCat(g_binary, ": ", DescribeResourceError(e), "\n"));
      ::_exit(kExitRuntimeFailure);
    } catch (const std::exception& e) {
      WriteAll(absl::StrCat(g_binary, ": internal error: uncaught exception: ", e.what(), "\n"));
    } catch (...) {
      WriteAll(absl::StrCat(g_binary, ": internal error: uncaught exception of an unknown type\n"));
    }
  } else {
    WriteAll(absl::StrCat(g_binary, ": internal error: terminated without an exception\n"));
  }
  std::abort();
}

}  // namespace

std::string DescribeResourceError(const std::exception& error) {
  if (dynamic_cast<const std::bad_alloc*>(&error) != nullptr) {
    return absl::StrCat("out of memory: an allocation failed (", error.what(),
                        "); give the process more memory (ulimit -v, the container's limit) or make the job smaller "
                        "(batch size, model, data, --threads)");
  }
  if (const auto* system = dynamic_cast<const std::system_error*>(&error)) {
    return absl::StrCat("cannot create a thread or take a system resource: ", system->what(),
                        "; raise the process's limits (ulimit -u, ulimit -v, the container's pids limit) or use "
                        "fewer threads (--threads)");
  }
  return absl::StrCat("internal error: ", error.what());
}

void InstallResourceErrorHandler(const char* binary) {
  g_binary = binary;
  std::set_terminate(OnTerminate);
}

}  // namespace pstrain
