// A fixed set of threads running queued tasks in order of arrival: the threads that move the
// tensor channel's bytes. A connection holds one only while it has bytes to move or a call to run;
// waiting connections hold none, so the ps's threads stay at this count however many connect.
// Thread-safety: thread-safe.
#ifndef PSTRAIN_PS_TRANSPORT_IO_THREADS_H_
#define PSTRAIN_PS_TRANSPORT_IO_THREADS_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace pstrain {

class IoThreads {
 public:
  // REQUIRES: threads >= 1.
  explicit IoThreads(int threads);
  // Runs Shutdown().
  ~IoThreads();

  // Queues `task`; dropped (never run) after Shutdown.
  void Schedule(std::function<void()> task);
  // Whether tasks are waiting for a thread: a thread then should not linger on one connection.
  bool Contended() const;
  // Runs the queued tasks, then joins the threads. Idempotent.
  void Shutdown();

 private:
  void Loop();

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_IO_THREADS_H_
