// How a task's main thread waits to stop: SIGTERM/SIGINT from an orchestrator or Ctrl-C, or a
// Shutdown call from the chief ending the job, done or failed (delivered as SIGUSR1 to the same
// wait).
// Thread-safety: Block() before any thread starts; RequestRemoteShutdown() from any thread;
// Wait() from the main thread only.
#ifndef PSTRAIN_COMMON_PLATFORM_STOP_SIGNALS_H_
#define PSTRAIN_COMMON_PLATFORM_STOP_SIGNALS_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "proto/common.pb.h"

namespace pstrain {

// A service's handler for Shutdown calls: must return at once (never block a gRPC reaction).
using RemoteShutdownHandler = std::function<absl::Status(const ShutdownRequest& request)>;

struct StopReason {
  int signal_number = 0;
  bool remote = false;       // the chief asked
  bool job_done = false;     // remote: the job finished successfully (false: it failed)
  std::string description;   // "Terminated", or "chief:0 ended the job: <reason>"
};

// The task's exit code: 0 when the chief ended a job done, 1 a failed one, 143 after a signal.
int StopExitCode(const StopReason& reason);

// Blocks SIGTERM, SIGINT and SIGUSR1 in the calling thread; threads started later inherit the mask,
// so only WaitForStop() receives them.
void BlockStopSignals();

// Waits for one of the blocked signals and says why the task stops.
StopReason WaitForStop();

// Records the chief's reason and wakes WaitForStop(). Always OK.
absl::Status RequestRemoteShutdown(const ShutdownRequest& request);

// The Shutdown handler of a task: RequestRemoteShutdown, or with `keep_serving` one that only
// logs the chief's word (through `log`) and keeps the task serving until a signal stops it.
RemoteShutdownHandler RemoteShutdownHandlerFor(bool keep_serving, std::function<void(const std::string&)> log);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLATFORM_STOP_SIGNALS_H_
