// One background thread running queued tasks in order: how the ps service keeps checkpoint I/O
// and shard creation (seconds for large variables) off gRPC's reaction threads, and how a backup
// applies forwarded updates after it has answered them (at idle priority: see ps_server.h).
// Thread-safety: all methods are thread-safe.
#ifndef PSTRAIN_PS_STORE_BACKGROUND_QUEUE_H_
#define PSTRAIN_PS_STORE_BACKGROUND_QUEUE_H_

#include <deque>
#include <functional>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace pstrain {

class BackgroundQueue {
 public:
  // kIdle: the thread runs only when the CPUs have nothing else to run (Linux SCHED_IDLE; where
  // the system refuses, it runs at normal priority).
  enum class Priority { kNormal, kIdle };
  explicit BackgroundQueue(Priority priority = Priority::kNormal);
  // Runs the tasks still queued, then joins the thread.
  ~BackgroundQueue();

  // Queues `task`; it runs on the background thread after the tasks queued before it.
  void Run(std::function<void()> task);

 private:
  void Loop(Priority priority);

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_BACKGROUND_QUEUE_H_
