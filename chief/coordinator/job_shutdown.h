// Ending a job: the chief tells every ps and worker, so no task keeps serving a job that is over
// (the tasks log the reason and exit, 0 when the job is done, non-zero when it failed).
// Thread-safety: call from one thread; the clients must allow concurrent calls.
#ifndef PSTRAIN_CHIEF_COORDINATOR_JOB_SHUTDOWN_H_
#define PSTRAIN_CHIEF_COORDINATOR_JOB_SHUTDOWN_H_

#include <string>
#include <vector>

#include "ps/client/ps_client.h"
#include "worker/client/worker_client.h"

namespace pstrain {

enum class JobEnd { kFailed, kDone };

// Sends Shutdown(reason, job_done) to every task at once and waits for all answers, each bounded
// by `timeout_ms`. Returns one line per task for the log: "told ps:0 that the job failed" (or "is
// done") or "could not tell ... (<error>)". Clients are not owned.
std::vector<std::string> TellTasksJobEnded(const std::vector<PsClient*>& ps, const std::vector<WorkerClient*>& workers,
                                           const std::string& caller, const std::string& reason, JobEnd end,
                                           int64_t timeout_ms);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_COORDINATOR_JOB_SHUTDOWN_H_
