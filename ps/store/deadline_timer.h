// Runs callbacks at deadlines on one background thread: how parked ps calls (sync pushes, pulls
// waiting for a version) time out without ever blocking a gRPC reaction thread. Deadlines are on
// the Env's clock, looked at least every 100 ms, so tests move a fake clock instead of waiting.
// Thread-safety: all methods are thread-safe. Callbacks run on the timer thread, one at a time,
// without the timer's lock held; they must not block.
#ifndef PSTRAIN_PS_STORE_DEADLINE_TIMER_H_
#define PSTRAIN_PS_STORE_DEADLINE_TIMER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/platform/env.h"

namespace pstrain {

class DeadlineTimer {
 public:
  // `fired(shutting_down)`: false when the deadline passed, true when Shutdown ran it early.
  using Callback = std::function<void(bool shutting_down)>;

  // `env` (not owned; REQUIRES: non-null, outlives this) gives the clock.
  explicit DeadlineTimer(Env* env);
  // Runs Shutdown().
  ~DeadlineTimer();

  // Schedules `cb` at `deadline`; returns an id for Cancel. After Shutdown, runs cb(true) at once.
  int64_t Schedule(absl::Time deadline, Callback cb);
  // Drops a scheduled callback; no-op when it already ran.
  void Cancel(int64_t id);
  // Runs every scheduled callback with shutting_down = true, then stops the thread. Idempotent.
  void Shutdown();

 private:
  void Loop();

  Env* const env_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::multimap<absl::Time, int64_t> by_time_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::pair<absl::Time, Callback>> by_id_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_DEADLINE_TIMER_H_
