#include "chief/coordinator/job_shutdown.h"

#include <thread>

#include "absl/strings/str_cat.h"

#include "common/platform/resource_errors.h"

namespace pstrain {
namespace {

std::string Outcome(const std::string& peer, JobEnd end, const absl::Status& s) {
  const char* what = end == JobEnd::kDone ? "that the job is done" : "that the job failed";
  if (s.ok()) return absl::StrCat("told ", peer, " ", what);
  return absl::StrCat("could not tell ", peer, " ", what, " (", s.message(), ")");
}

}  // namespace

std::vector<std::string> TellTasksJobEnded(const std::vector<PsClient*>& ps, const std::vector<WorkerClient*>& workers,
                                           const std::string& caller, const std::string& reason, JobEnd end,
                                           int64_t timeout_ms) {
  ShutdownRequest request;
  request.set_caller(caller);
  request.set_reason(reason);
  request.set_job_done(end == JobEnd::kDone);
  std::vector<std::string> lines(ps.size() + workers.size());
  std::vector<std::thread> calls;
  // A thread that cannot be created: the calls started end on their own (their timeouts).
  StartThreadsOrStop(&calls, [&] {
  for (size_t i = 0; i < workers.size(); ++i) {
    calls.emplace_back([&, i] {
      ShutdownResponse response;
      lines[i] = Outcome(workers[i]->peer(), end, workers[i]->Shutdown(request, &response, timeout_ms));
    });
  }
  // Workers first in the list: they are the ones that would otherwise wait on a ps that is gone.
  for (size_t i = 0; i < ps.size(); ++i) {
    calls.emplace_back([&, i] {
      ShutdownResponse response;
      lines[workers.size() + i] = Outcome(ps[i]->peer(), end, ps[i]->Shutdown(request, &response));
    });
  }
  }, [] {});
  for (std::thread& t : calls) t.join();
  return lines;
}

}  // namespace pstrain
