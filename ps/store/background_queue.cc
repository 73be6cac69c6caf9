#include "ps/store/background_queue.h"

namespace pstrain {

BackgroundQueue::BackgroundQueue() : thread_([this] { Loop(); }) {}

BackgroundQueue::~BackgroundQueue() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void BackgroundQueue::Run(std::function<void()> task) {
  absl::MutexLock l(&mu_);
  tasks_.push_back(std::move(task));
}

void BackgroundQueue::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock l(&mu_);
      mu_.Await(absl::Condition(
          +[](BackgroundQueue* q) ABSL_NO_THREAD_SAFETY_ANALYSIS { return q->stopping_ || !q->tasks_.empty(); }, this));
      if (tasks_.empty()) return;  // stopping, nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace pstrain
