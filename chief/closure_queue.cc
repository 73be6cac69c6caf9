#include "chief/closure_queue.h"

namespace pstrain {

void ClosureQueue::Push(const Closure& closure) {
  absl::MutexLock lock(&mu_);
  waiting_.push_back(closure);
  unfinished_.insert(closure.id);
}

std::optional<Closure> ClosureQueue::Take(int worker, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto find = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> std::deque<Closure>::iterator {
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
      if (it->target_worker < 0 || it->target_worker == worker) return it;
    }
    return waiting_.end();
  };
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return shutdown_ || !error_.ok() || (!paused_ && find() != waiting_.end());
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (shutdown_ || !error_.ok() || paused_) return std::nullopt;
  auto it = find();
  if (it == waiting_.end()) return std::nullopt;
  Closure c = *it;
  waiting_.erase(it);
  return c;
}

bool ClosureQueue::Finish(const Closure& closure, const std::function<void()>& record) {
  absl::MutexLock lock(&mu_);
  if (unfinished_.count(closure.id) == 0) return false;
  if (record) record();
  unfinished_.erase(closure.id);
  // A duplicate of this closure may still wait in the queue after a false failure report.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    it = it->id == closure.id ? waiting_.erase(it) : it + 1;
  }
  return true;
}

void ClosureQueue::Requeue(const Closure& closure) {
  absl::MutexLock lock(&mu_);
  if (unfinished_.count(closure.id) == 0) return;  // another execution finished it already
  waiting_.push_front(closure);
}

void ClosureQueue::Fail(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (error_.ok()) error_ = status;
}

absl::Status ClosureQueue::WaitAllFinished(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return unfinished_.empty() || !error_.ok(); };
  mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
  if (!error_.ok()) return error_;
  if (!unfinished_.empty()) {
    return absl::DeadlineExceededError(std::to_string(unfinished_.size()) + " closures still unfinished");
  }
  return absl::OkStatus();
}

void ClosureQueue::DropWaiting() {
  absl::MutexLock lock(&mu_);
  for (const Closure& c : waiting_) unfinished_.erase(c.id);
  waiting_.clear();
}

void ClosureQueue::DropAll() {
  absl::MutexLock lock(&mu_);
  waiting_.clear();
  unfinished_.clear();
}

void ClosureQueue::Pause() {
  absl::MutexLock lock(&mu_);
  paused_ = true;
}

void ClosureQueue::Resume() {
  absl::MutexLock lock(&mu_);
  paused_ = false;
}

bool ClosureQueue::paused() const {
  absl::MutexLock lock(&mu_);
  return paused_;
}

void ClosureQueue::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
}

int64_t ClosureQueue::pending() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(waiting_.size());
}

int64_t ClosureQueue::unfinished() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(unfinished_.size());
}

absl::Status ClosureQueue::error() const {
  absl::MutexLock lock(&mu_);
  return error_;
}

}  // namespace pstrain
