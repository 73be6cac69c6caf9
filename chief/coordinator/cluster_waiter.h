// Waiting for the training cluster at start-up: every ps and every worker must answer a Handshake
// (right protocol version) before the chief plans anything. Bounded: when the deadline passes the
// error names each task that never answered and the last error seen for it.
// Thread-safety: a pure function over the given clients (which must be thread-safe).
#ifndef PSTRAIN_CHIEF_COORDINATOR_CLUSTER_WAITER_H_
#define PSTRAIN_CHIEF_COORDINATOR_CLUSTER_WAITER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/platform/env.h"
#include "ps/client/ps_client.h"
#include "worker/client/worker_client.h"

namespace pstrain {

struct ClusterWaitOptions {
  int64_t timeout_ms = 120000;        // overall bound
  int64_t retry_interval_ms = 500;
  int64_t handshake_timeout_ms = 2000;
  std::string caller = "chief:0";
  // Polled between two rounds: true ends the wait at once (SIGTERM must not wait out timeout_ms).
  std::function<bool()> stopping;
};

// Blocks until every task answered. DeadlineExceeded naming the silent tasks on timeout;
// FailedPrecondition when a task answers with another protocol version (mismatched binaries);
// Cancelled, naming the silent tasks, when `options.stopping` says so.
// `log` (may be empty) receives a line each time a task answers for the first time.
absl::Status WaitForCluster(Env* env, const std::vector<PsClient*>& ps, const std::vector<WorkerClient*>& workers,
                            const ClusterWaitOptions& options, const std::function<void(const std::string&)>& log);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_COORDINATOR_CLUSTER_WAITER_H_
