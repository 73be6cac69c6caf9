// A fixed set of threads that runs one parallel loop at a time: Run(n, fn) calls fn(0..n-1), fn(0)
// on the caller's thread and the others on pool threads, and returns when all are done. Kept
// deliberately small: the CPU kernels split a batch into one chunk per thread, once per step.
// Thread-safety: Run may be called from one thread at a time; fn must be safe to run concurrently.
#ifndef PSTRAIN_WORKER_CPU_THREAD_POOL_H_
#define PSTRAIN_WORKER_CPU_THREAD_POOL_H_

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace pstrain {

class ThreadPool {
 public:
  // Starts `threads - 1` helper threads (the caller is the first thread). REQUIRES: threads >= 1.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(helpers_.size()) + 1; }

  // REQUIRES: 1 <= n <= size().
  void Run(int n, const std::function<void(int)>& fn);

  // Splits items [0, n) into min(size(), n) contiguous chunks (at least one) and runs
  // fn(chunk, first item, count) for each as Run does; returns the number of chunks. Chunk t
  // starts at n * t / chunks, so the split depends only on n and size().
  int RunChunks(int64_t n, const std::function<void(int, int64_t, int64_t)>& fn);

 private:
  void HelperLoop(int index);
  void Stop();  // makes the helpers return

  absl::Mutex mu_;
  absl::CondVar work_cv_;
  absl::CondVar done_cv_;
  const std::function<void(int)>* fn_ ABSL_GUARDED_BY(mu_) = nullptr;
  int tasks_ ABSL_GUARDED_BY(mu_) = 0;
  int pending_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> helpers_;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_THREAD_POOL_H_
