#include "ps/store/deadline_timer.h"

#include <algorithm>
#include <vector>

namespace pstrain {

DeadlineTimer::DeadlineTimer(Env* env) : env_(env), thread_([this] { Loop(); }) {}

DeadlineTimer::~DeadlineTimer() { Shutdown(); }

int64_t DeadlineTimer::Schedule(absl::Time deadline, Callback cb) {
  {
    absl::MutexLock l(&mu_);
    if (!stopping_) {
      const int64_t id = next_id_++;
      by_time_.emplace(deadline, id);
      by_id_.emplace(id, std::make_pair(deadline, std::move(cb)));
      return id;
    }
  }
  cb(true);
  return 0;
}

void DeadlineTimer::Cancel(int64_t id) {
  absl::MutexLock l(&mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  auto range = by_time_.equal_range(it->second.first);
  for (auto t = range.first; t != range.second; ++t) {
    if (t->second == id) {
      by_time_.erase(t);
      break;
    }
  }
  by_id_.erase(it);
}

void DeadlineTimer::Shutdown() {
  std::vector<Callback> pending;
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [id, entry] : by_id_) pending.push_back(std::move(entry.second));
    by_id_.clear();
    by_time_.clear();
  }
  for (Callback& cb : pending) cb(true);
  if (thread_.joinable()) thread_.join();
}

void DeadlineTimer::Loop() {
  absl::MutexLock l(&mu_);
  while (!stopping_) {
    if (by_time_.empty()) {
      mu_.Await(absl::Condition(
          +[](DeadlineTimer* t) ABSL_NO_THREAD_SAFETY_ANALYSIS { return t->stopping_ || !t->by_time_.empty(); }, this));
      continue;
    }
    const absl::Time first = by_time_.begin()->first;
    const absl::Duration left = first - env_->Now();
    if (left > absl::ZeroDuration()) {
      // Wakes early when an earlier deadline is scheduled or the timer stops; looks again at least
      // every 100 ms, as the Env's clock may be a test's.
      const size_t size = by_time_.size();
      auto changed = [this, first, size]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return stopping_ || by_time_.size() != size || (!by_time_.empty() && by_time_.begin()->first != first);
      };
      mu_.AwaitWithTimeout(absl::Condition(&changed), std::min(left, absl::Milliseconds(100)));
      continue;
    }
    const int64_t id = by_time_.begin()->second;
    by_time_.erase(by_time_.begin());
    auto it = by_id_.find(id);
    Callback cb = std::move(it->second.second);
    by_id_.erase(it);
    mu_.Unlock();
    cb(false);
    mu_.Lock();
  }
}

}  // namespace pstrain
