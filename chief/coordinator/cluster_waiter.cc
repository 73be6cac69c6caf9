#include "chief/coordinator/cluster_waiter.h"

#include "absl/strings/str_cat.h"
#include "common/wire/protocol_version.h"

namespace pstrain {
namespace {

struct Pending {
  std::string peer;
  std::function<absl::Status(HandshakeResponse*)> handshake;
  bool answered = false;
  std::string last_error = "no answer yet";
};

}  // namespace

absl::Status WaitForCluster(Env* env, const std::vector<PsClient*>& ps, const std::vector<WorkerClient*>& workers,
                            const ClusterWaitOptions& options, const std::function<void(const std::string&)>& log) {
  HandshakeRequest hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_caller(options.caller);
  std::vector<Pending> tasks;
  for (PsClient* p : ps) {
    tasks.push_back({p->peer(), [p, &hello](HandshakeResponse* r) { return p->Handshake(hello, r); }});
  }
  for (WorkerClient* w : workers) {
    const int64_t t = options.handshake_timeout_ms;
    tasks.push_back({w->peer(), [w, &hello, t](HandshakeResponse* r) { return w->Handshake(hello, r, t); }});
  }
  const int64_t deadline = env->NowMicros() + options.timeout_ms * 1000;
  while (true) {
    int silent = 0;
    for (Pending& task : tasks) {
      if (task.answered) continue;
      HandshakeResponse response;
      absl::Status s = task.handshake(&response);
      if (s.ok()) s = CheckProtocolVersion(response.protocol_version(), task.peer);
      if (s.ok()) {
        task.answered = true;
        if (log) log(absl::StrCat(task.peer, " is up (", response.task(), ")"));
      } else if (s.code() == absl::StatusCode::kFailedPrecondition) {
        return s;
      } else {
        task.last_error = std::string(s.message());
        ++silent;
      }
    }
    if (silent == 0) return absl::OkStatus();
    if (env->NowMicros() >= deadline || (options.stopping && options.stopping())) break;
    env->SleepForMicros(options.retry_interval_ms * 1000);
  }
  std::string names;
  for (const Pending& task : tasks) {
    if (!task.answered) absl::StrAppend(&names, "\n  ", task.peer, ": ", task.last_error);
  }
  if (options.stopping && options.stopping()) {
    return absl::CancelledError(absl::StrCat("stopped while waiting for the cluster; still silent:", names));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "these tasks did not answer within ", options.timeout_ms / 1000.0,
      " s (are they started, with the same TF_CONFIG cluster?):", names));
}

}  // namespace pstrain
