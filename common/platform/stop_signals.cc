#include "common/platform/stop_signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

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
      remote_reason = new std::string(absl::StrCat(request.caller().empty() ? "the chief" : request.caller(),
                                                   " ended the job: ", request.reason()));
    }
  }
  kill(getpid(), SIGUSR1);
  return absl::OkStatus();
}

}  // namespace pstrain
