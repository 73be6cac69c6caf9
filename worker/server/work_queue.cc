#include "worker/server/work_queue.h"

#include "common/platform/resource_errors.h"

namespace pstrain {

WorkQueue::WorkQueue(int threads) {
  StartThreadsOrStop(
      &threads_, [&] { for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); }); },
      [this] { Stop(); });
}

WorkQueue::~WorkQueue() {
  Stop();
  for (std::thread& t : threads_) t.join();
}

void WorkQueue::Stop() {
  absl::MutexLock lock(&mu_);
  stop_ = true;
}

void WorkQueue::Schedule(std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(fn));
}

void WorkQueue::Loop() {
  while (true) {
    std::function<void()> fn;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping and drained
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

}  // namespace pstrain
