#include "chief/coordinator/closure_queue.h"

namespace pstrain {

void ClosureQueue::OrphanIfLostLocked(Closure* c) {
  if (c->target_worker >= 0 && lost_targets_.count(c->target_worker) > 0) {
    c->target_worker = -1;
    c->orphan = true;
  }
}

void ClosureQueue::Push(const Closure& closure) {
  absl::MutexLock lock(&mu_);
  waiting_.push_back(closure);
  OrphanIfLostLocked(&waiting_.back());
  unfinished_.insert(closure.id);
}

void ClosureQueue::SetTargetLost(int worker, bool lost) {
  absl::MutexLock lock(&mu_);
  if (!lost) {
    lost_targets_.erase(worker);
    return;
  }
  lost_targets_.insert(worker);
  for (Closure& c : waiting_) OrphanIfLostLocked(&c);
}

std::optional<Closure> ClosureQueue::Take(int worker, absl::Duration timeout, TakeMode mode) {
  absl::MutexLock lock(&mu_);
  auto find = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> std::deque<Closure>::iterator {
    // A lost worker's dispatchers may still be waiting here when it is lost: the orphans that
    // loss makes must go to live workers, never back to it.
    if (lost_targets_.count(worker) > 0) return waiting_.end();
    // Orphans: the earliest sync round first (a later one would wait on the ps for it).
    auto best = waiting_.end();
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
      if (mode == TakeMode::kOrphans) {
        if (it->orphan && (best == waiting_.end() || it->first_step < best->first_step)) best = it;
      } else if (!it->orphan && (it->target_worker < 0 || it->target_worker == worker)) {
        return it;
      }
    }
    return best;
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
  for (const Closure& c : waiting_) {
    if (c.id == closure.id) return;  // re-queued already (a silent worker's closure)
  }
  waiting_.push_front(closure);
  OrphanIfLostLocked(&waiting_.front());
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
  std::deque<Closure> keep;
  for (const Closure& c : waiting_) {
    if (c.kind == Closure::Kind::kTrain && c.data_position >= 0) {
      keep.push_back(c);
    } else {
      unfinished_.erase(c.id);
    }
  }
  waiting_ = std::move(keep);
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
