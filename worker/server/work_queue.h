// WorkQueue: a few threads that run scheduled closures in FIFO order. The gRPC service parks each
// call's reactor and runs the (blocking) worker logic here, never on a reaction thread.
// Thread-safety: Schedule may be called from any thread. The destructor runs what was already
// scheduled, then joins the threads.
#ifndef PSTRAIN_WORKER_SERVER_WORK_QUEUE_H_
#define PSTRAIN_WORKER_SERVER_WORK_QUEUE_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace pstrain {

class WorkQueue {
 public:
  // REQUIRES: threads >= 1.
  explicit WorkQueue(int threads);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Schedule(std::function<void()> fn);

 private:
  void Loop();
  void Stop();  // makes the threads return once the queue is drained

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_SERVER_WORK_QUEUE_H_
