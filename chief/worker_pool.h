// WorkerPool: one dispatch thread per worker task. Each thread takes closures from the shared
// ClosureQueue, runs them on its worker (RunSteps or Evaluate) and hands results to a sink. A
// worker whose call fails with a retryable error (gone, or past its deadline) has its closure
// re-queued for the others, is marked dead and is polled with Handshake; when it answers again
// (same TF_CONFIG, restarted process) it is re-configured and used again. A closure that failed
// because of a ps (the worker's ABORTED "ps:N ...", common/ps_trouble.h) is re-queued as it was,
// the worker stays in use, and the sink hears OnPsTrouble. Non-retryable errors
// stop the phase through ClosureQueue::Fail with a message naming the worker and the cause.
// Thread-safety: Start/Stop from one owning thread; the rest from any thread.
#ifndef PSTRAIN_CHIEF_WORKER_POOL_H_
#define PSTRAIN_CHIEF_WORKER_POOL_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "chief/closure_queue.h"
#include "common/env.h"
#include "worker/worker_client.h"

namespace pstrain {

// Receives what the pool observes. Called from the dispatch threads, concurrently.
class WorkerPoolSink {
 public:
  virtual ~WorkerPoolSink() = default;
  // Counted results only (the first execution of a closure to finish). Called while the queue
  // holds its lock: record the result and return; never call into the queue or the pool.
  virtual void OnTrainResult(int worker, const Closure& closure, const RunStepsResponse& response) = 0;
  virtual void OnEvalResult(int worker, const Closure& closure, const EvaluateResponse& response) = 0;
  // A retryable failure of `worker`. Returns OK to go on without it, or the error that must stop
  // the job (e.g. a ps is gone, or sync mode cannot go on without this worker).
  virtual absl::Status OnWorkerLost(int worker, const absl::Status& cause) = 0;
  virtual void OnWorkerBack(int worker) = 0;
  // `worker`'s closure failed because of ps `ps` (gone, silent, or restarted without its shards);
  // the closure is back in the queue and the worker stays alive. The sink checks the ps and holds
  // the queue (ClosureQueue::Pause) while it recovers; it may call into the queue.
  virtual void OnPsTrouble(int ps, const absl::Status& cause) = 0;
};

// True for failures that mean "this worker is gone, late or restarted": the closure can run
// elsewhere and the worker is polled.
bool IsRetryableWorkerError(const absl::Status& status);

struct WorkerPoolOptions {
  int64_t run_steps_timeout_ms = 600000;  // a closure's deadline
  int64_t evaluate_timeout_ms = 600000;
  int64_t handshake_timeout_ms = 2000;
  int64_t configure_timeout_ms = 60000;
  int64_t poll_interval_ms = 1000;        // how often a dead worker is polled
  // After a closure failed because of a ps, the worker's thread waits this long before taking the
  // next closure (the sink normally pauses the queue; this keeps a worker from spinning anyway).
  int64_t ps_trouble_backoff_ms = 100;
};

struct PoolWorkerInfo {
  int index = 0;
  std::string peer;
  bool alive = true;
  int64_t closures_done = 0;
  int64_t failures = 0;
  int64_t ps_failures = 0;  // closures that failed because of a ps (not counted as failures)
  std::string last_error;
};

class WorkerPool {
 public:
  // Builds the Configure request for `worker` (at the current global step) when it comes back.
  using ConfigureFn = std::function<ConfigureRequest(int worker)>;

  // `env`, `workers`, `queue` and `sink` are not owned and must outlive the pool.
  WorkerPool(Env* env, std::vector<WorkerClient*> workers, ClosureQueue* queue, WorkerPoolSink* sink,
             ConfigureFn configure, WorkerPoolOptions options);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Starts one thread per worker. REQUIRES: not started.
  void Start();
  // Stops and joins the threads (a running call finishes or times out first). Idempotent.
  void Stop();

  int num_workers() const { return static_cast<int>(workers_.size()); }
  int NumAlive() const;
  std::vector<PoolWorkerInfo> Snapshot() const;

 private:
  void Run(int worker);
  // Runs one closure on `worker`; OK when it ran (counted or duplicate).
  absl::Status Execute(int worker, const Closure& closure);
  // Handles a failed closure: re-queue and mark dead, or fail the phase.
  void HandleFailure(int worker, const Closure& closure, const absl::Status& status);
  // One poll of a dead worker: Handshake, then Configure. True when it is back.
  bool PollOnce(int worker);
  void SetAlive(int worker, bool alive, const std::string& error);

  Env* const env_;
  const std::vector<WorkerClient*> workers_;
  std::vector<std::string> peers_;  // set in the constructor, read-only afterwards
  ClosureQueue* const queue_;
  WorkerPoolSink* const sink_;
  const ConfigureFn configure_;
  const WorkerPoolOptions options_;

  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
  mutable absl::Mutex mu_;
  std::vector<PoolWorkerInfo> states_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_WORKER_POOL_H_
