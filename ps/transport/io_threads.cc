#include "ps/transport/io_threads.h"

#include "common/platform/resource_errors.h"

namespace pstrain {

IoThreads::IoThreads(int threads) {
  StartThreadsOrStop(
      &threads_, [&] { for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); }); },
      [this] {
        absl::MutexLock l(&mu_);
        stopping_ = true;
      });
}

IoThreads::~IoThreads() { Shutdown(); }

void IoThreads::Schedule(std::function<void()> task) {
  absl::MutexLock l(&mu_);
  if (!stopping_) tasks_.push_back(std::move(task));
}

bool IoThreads::Contended() const {
  absl::MutexLock l(&mu_);
  return !tasks_.empty();
}

void IoThreads::Shutdown() {
  {
    absl::MutexLock l(&mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void IoThreads::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock l(&mu_);
      mu_.Await(absl::Condition(
          +[](IoThreads* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) { return p->stopping_ || !p->tasks_.empty(); },
          this));
      if (tasks_.empty()) return;  // stopping, and nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace pstrain
