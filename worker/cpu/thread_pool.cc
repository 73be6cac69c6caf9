#include "worker/cpu/thread_pool.h"

#include <algorithm>

#include "common/platform/resource_errors.h"

namespace pstrain {

ThreadPool::ThreadPool(int threads) {
  StartThreadsOrStop(
      &helpers_, [&] { for (int i = 1; i < threads; ++i) helpers_.emplace_back([this, i] { HelperLoop(i); }); },
      [this] { Stop(); });
}

ThreadPool::~ThreadPool() {
  Stop();
  for (std::thread& t : helpers_) t.join();
}

void ThreadPool::Stop() {
  absl::MutexLock lock(&mu_);
  stop_ = true;
  work_cv_.SignalAll();
}

void ThreadPool::Run(int n, const std::function<void(int)>& fn) {
  if (n <= 1) {
    fn(0);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    fn_ = &fn;
    tasks_ = n;
    pending_ = n - 1;
    ++generation_;
    work_cv_.SignalAll();
  }
  fn(0);
  absl::MutexLock lock(&mu_);
  while (pending_ > 0) done_cv_.Wait(&mu_);
  fn_ = nullptr;
}

int ThreadPool::RunChunks(int64_t n, const std::function<void(int, int64_t, int64_t)>& fn) {
  const int chunks = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(size(), n)));
  Run(chunks, [&](int t) {
    const int64_t begin = n * t / chunks, end = n * (t + 1) / chunks;
    fn(t, begin, end - begin);
  });
  return chunks;
}

void ThreadPool::HelperLoop(int index) {
  int64_t seen = 0;
  while (true) {
    const std::function<void(int)>* fn = nullptr;
    {
      absl::MutexLock lock(&mu_);
      while (!stop_ && generation_ == seen) work_cv_.Wait(&mu_);
      if (stop_) return;
      seen = generation_;
      if (index >= tasks_) continue;
      fn = fn_;
    }
    (*fn)(index);
    absl::MutexLock lock(&mu_);
    if (--pending_ == 0) done_cv_.Signal();
  }
}

}  // namespace pstrain
