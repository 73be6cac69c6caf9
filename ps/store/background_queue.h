// One background thread running queued tasks in order: how the ps service keeps checkpoint I/O
// and shard creation (seconds for large variables) off gRPC's reaction threads.
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
  BackgroundQueue();
  // Runs the tasks still queued, then joins the thread.
  ~BackgroundQueue();

  // Queues `task`; it runs on the background thread after the tasks queued before it.
  void Run(std::function<void()> task);

 private:
  void Loop();

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_BACKGROUND_QUEUE_H_
