// PsHealthWatch: one thread per ps task that handshakes it every interval through a client with a
// short deadline. A ps that does not answer (gone, cut off, or alive but silent: SIGSTOP, a hung
// process) is reported through `on_silent`, so a hung ps is taken for lost after about the
// probe's deadline, not after a pull's minutes-long one. Reports repeat, one per failed probe;
// the receiver dedupes.
// Thread-safety: Start/Stop from the owning thread; `on_silent` runs on the watch threads.
#ifndef PSTRAIN_CHIEF_RECOVERY_PS_HEALTH_WATCH_H_
#define PSTRAIN_CHIEF_RECOVERY_PS_HEALTH_WATCH_H_

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "common/platform/env.h"
#include "ps/client/ps_client.h"

namespace pstrain {

class PsHealthWatch {
 public:
  using SilentFn = std::function<void(int ps, const absl::Status& cause)>;
  // `probes[i]` reaches ps task i with the health deadline (not owned; must outlive the watch).
  PsHealthWatch(Env* env, std::vector<PsClient*> probes, int64_t interval_ms, SilentFn on_silent);
  ~PsHealthWatch();
  PsHealthWatch(const PsHealthWatch&) = delete;
  PsHealthWatch& operator=(const PsHealthWatch&) = delete;

  void Start();
  // Joins the threads (a probe in flight finishes or hits its deadline first). Idempotent.
  void Stop();

 private:
  void Watch(int ps);

  Env* const env_;
  const std::vector<PsClient*> probes_;
  const int64_t interval_ms_;
  const SilentFn on_silent_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_RECOVERY_PS_HEALTH_WATCH_H_
