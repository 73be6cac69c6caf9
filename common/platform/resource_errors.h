// Resources that run out are errors, not aborts. A thread that cannot be created (std::thread and
// std::async throw std::system_error) or an allocation that fails (std::bad_alloc, e.g. a size
// from input too large for this host) ends the process with a message naming what ran out and how
// to make room, and exit 1, wherever it is thrown: every main installs the handler below, which
// std::terminate calls for an exception that escapes main or a thread. Thread groups start their
// threads with StartThreadsOrStop, so a failed creation never destroys a running std::thread
// (which would terminate without the exception).
// Thread-safety: InstallResourceErrorHandler once, at the start of main; the rest is re-entrant.
#ifndef PSTRAIN_COMMON_PLATFORM_RESOURCE_ERRORS_H_
#define PSTRAIN_COMMON_PLATFORM_RESOURCE_ERRORS_H_

#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace pstrain {

// Makes std::terminate print "<binary>: out of memory ..." (std::bad_alloc) or "<binary>: cannot
// create a thread ..." (std::system_error) and exit kExitRuntimeFailure (1). Any other exception
// is reported as an internal error with its what() and aborts (a bug, kept for its core dump).
// `binary` must outlive the process (a string literal).
void InstallResourceErrorHandler(const char* binary);

// The message the handler prints for `error` (exposed for tests): what ran out and how to fix it.
std::string DescribeResourceError(const std::exception& error);

// Runs `create`, which appends threads to `threads`; when it throws (a thread that cannot be
// created), calls `stop` (which must make every started thread return), joins the started
// threads and rethrows, so the caller's unwinding destroys no joinable std::thread.
template <typename Create, typename Stop>
void StartThreadsOrStop(std::vector<std::thread>* threads, Create create, Stop stop) {
  try {
    create();
  } catch (...) {
    stop();
    for (std::thread& t : *threads) {
      if (t.joinable()) t.join();
    }
    threads->clear();
    throw;
  }
}

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLATFORM_RESOURCE_ERRORS_H_
