#include "common/platform/stop_signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/platform/exit_codes.h"

namespace pstrain {
namespace {

sigset_t StopSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  return set;
}

absl::Mutex remote_mu(absl::kConstInit);
std::string* remote_reason ABSL_GUARDED_BY(remote_mu) = nullptr;  // leaked: read until exit
bool remote_job_done ABSL_GUARDED_BY(remote_mu) = false;

std::string Describe(const ShutdownRequest& request) {
  return absl::StrCat(request.caller().empty() ? "the chief" : request.caller(), " ended the job",
                      request.job_done() ? " (done)" : " (failed)", ": ", request.reason());
}

}  // namespace

void BlockStopSignals() {
  sigset_t set = StopSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

StopReason WaitForStop() {
  sigset_t set = StopSet();
  StopReason reason;
  sigwait(&set, &reason.signal_number);
  absl::MutexLock lock(&remote_mu);
  if (reason.signal_number == SIGUSR1 && remote_reason != nullptr) {
    reason.remote = true;
    reason.job_done = remote_job_done;
    reason.description = *remote_reason;
  } else {
    reason.description = strsignal(reason.signal_number);
  }
  return reason;
}

absl::Status RequestRemoteShutdown(const ShutdownRequest& request) {
  {
    absl::MutexLock lock(&remote_mu);
    if (remote_reason == nullptr) {
      remote_reason = new std::string(Describe(request));
      remote_job_done = request.job_done();
    }
  }
  kill(getpid(), SIGUSR1);
  return absl::OkStatus();
}

int StopExitCode(const StopReason& reason) {
  if (!reason.remote) return kExitStoppedBySignal;  // an orchestrator's stop, as every binary
  return reason.job_done ? kExitOk : kExitRuntimeFailure;
}

RemoteShutdownHandler RemoteShutdownHandlerFor(bool keep_serving, std::function<void(const std::string&)> log) {
  if (!keep_serving) return RequestRemoteShutdown;
  return [log = std::move(log)](const ShutdownRequest& request) {
    if (log) log(absl::StrCat(Describe(request), "; --keep_serving: still serving"));
    return absl::OkStatus();
  };
}

}  // namespace pstrain
