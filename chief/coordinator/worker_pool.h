// WorkerPool: one dispatch thread per worker task. Each thread takes closures from the shared
// ClosureQueue, has the sink give a training closure its data (AssignData), runs it on its worker
// (RunSteps or Evaluate) and hands results to a sink. A worker whose call fails with a retryable
// error (gone, or past its deadline) has its closure re-queued for the others (same data part and
// position), is marked dead and is polled with Handshake; when it answers again (same TF_CONFIG,
// restarted process) it is re-configured and used again. A closure that failed because of a ps
// (the worker's ABORTED "ps:N ...", common/wire/ps_trouble.h) is re-queued as it was, the worker stays
// in use, and the sink hears OnPsTrouble. Non-retryable errors stop the phase through
// ClosureQueue::Fail with a message naming the worker and the cause.
// Silent workers: while a worker runs a closure, a watchdog thread sends it Handshakes; a worker
// that answers none for silence_timeout_ms (stopped, hung, unreachable) is lost the same way, its
// closures re-queued at once; the call still in flight is abandoned (its result, if it ever
// comes, is dropped when the re-run finished first) and the worker is polled once it returns.
// Sync mode (rescue_threads > 0): each worker also has rescue threads that take only orphans
// (closures of a lost worker's data part), so a live worker runs them beside its own closure of
// the same round, which waits on the ps for exactly that part.
// Thread-safety: Start/Stop from one owning thread; the rest from any thread.
#ifndef PSTRAIN_CHIEF_COORDINATOR_WORKER_POOL_H_
#define PSTRAIN_CHIEF_COORDINATOR_WORKER_POOL_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "chief/coordinator/closure_queue.h"
#include "common/platform/env.h"
#include "worker/client/worker_client.h"

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
  // Called before a closure is sent to `worker`: gives a training closure its data part and
  // position when it has none yet (see DataPositions). Default: leaves it unchanged.
  virtual void AssignData(int worker, Closure* closure) {}
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
  // A busy worker that answers no Handshake for this long is lost (0: never; only the closure
  // deadline then). Probed every poll_interval_ms.
  int64_t silence_timeout_ms = 30000;
  int rescue_threads = 0;                 // per worker, for orphans (sync mode; see above)
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
  bool IsAlive(int worker) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether `worker` answers a Handshake within the handshake timeout.
  bool Answers(int worker);
  void Run(int worker);
  // A rescue thread of `worker`: runs orphans while the worker is alive.
  void RunRescue(int worker);
  // Probes busy workers and declares silent ones lost.
  void Watch();
  // Marks `worker` lost (dead, its targeted closures orphaned) and tells the sink; a fatal answer
  // fails the phase.
  void MarkLost(int worker, const absl::Status& cause);
  // MarkLost's last part: tells the sink, failing the phase on a fatal answer.
  void ReportLost(int worker, const absl::Status& cause);
  // Runs one closure on `worker`; OK when it ran (counted or duplicate).
  absl::Status Execute(int worker, const Closure& closure);
  // Take, assign data, run and handle failure: one closure on `worker`. False when none ran.
  bool DispatchOne(int worker, ClosureQueue::TakeMode mode);
  // Handles a failed closure: re-queue and mark dead, or fail the phase.
  void HandleFailure(int worker, const Closure& closure, const absl::Status& status);
  // One poll of a dead worker: Handshake, then Configure. True when it is back.
  bool PollOnce(int worker);
  void SetAlive(int worker, bool alive, const std::string& error);
  // SetAlive's record of the state, without the queue.
  void SetStateLocked(int worker, bool alive, const std::string& error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

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
  struct Busy {
    std::map<int64_t, Closure> in_flight;  // closures running on the worker, by id
    int64_t last_heard_micros = 0;         // its last answer (or the start of its first call in flight)
  };
  std::vector<Busy> busy_ ABSL_GUARDED_BY(mu_);
  std::set<int64_t> abandoned_ ABSL_GUARDED_BY(mu_);  // re-queued by the watchdog while in flight
};

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_COORDINATOR_WORKER_POOL_H_
