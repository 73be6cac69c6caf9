#include "ps/store/background_queue.h"

#include <sched.h>

namespace pstrain {

BackgroundQueue::BackgroundQueue(Priority priority) : thread_([this, priority] { Loop(priority); }) {}

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

void BackgroundQueue::Loop(Priority priority) {
  if (priority == Priority::kIdle) {
    sched_param param{};
    (void)sched_setscheduler(0, SCHED_IDLE, &param);  // 0: this thread; lowering needs no privilege
  }
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
