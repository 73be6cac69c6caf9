// How a task's main thread waits to stop: SIGTERM/SIGINT from an orchestrator or Ctrl-C, or a
// Shutdown call from the chief ending a failed job (delivered as SIGUSR1 to the same wait).
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
  bool remote = false;       // the chief asked (the job failed)
  std::string description;   // "Terminated", or "the chief:0 ended the job: <reason>"
};

// Blocks SIGTERM, SIGINT and SIGUSR1 in the calling thread; threads started later inherit the mask,
// so only WaitForStop() receives them.
void BlockStopSignals();

// Waits for one of the blocked signals and says why the task stops.
StopReason WaitForStop();

// Records the chief's reason and wakes WaitForStop(). Always OK.
absl::Status RequestRemoteShutdown(const ShutdownRequest& request);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLATFORM_STOP_SIGNALS_H_
