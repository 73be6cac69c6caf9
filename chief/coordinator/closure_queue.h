// ClosureQueue: the chief's queue of closures (k training steps, or one evaluation shard) waiting
// for a worker, with at-least-once delivery: a closure taken by a worker that then fails is put
// back at the front and given to another worker; a closure counts once, whichever execution of it
// finishes first. A fatal error (non-retryable failure) wakes every waiter and ends the phase.
// Thread-safety: every method may be called from any thread.
#ifndef PSTRAIN_CHIEF_COORDINATOR_CLOSURE_QUEUE_H_
#define PSTRAIN_CHIEF_COORDINATOR_CLOSURE_QUEUE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <set>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace pstrain {

struct Closure {
  enum class Kind { kTrain, kEvaluate };
  int64_t id = 0;
  Kind kind = Kind::kTrain;
  int32_t num_steps = 0;      // kTrain: worker steps
  int64_t first_step = 0;     // kTrain, sync mode: global step of the first step
  int32_t shard_index = 0;    // kEvaluate
  int32_t num_shards = 0;     // kEvaluate
  int target_worker = -1;     // -1: any worker; otherwise only that worker may run it (sync mode)
  // kTrain: the data part and its first batch (DataPositions); -1 until handed out (async) or
  // chosen for a sync round. A re-queued closure keeps them: a re-run trains the same examples.
  int32_t data_part = -1;
  int64_t data_position = -1;
  // Sync mode: a closure whose target worker was lost; taken only by the pool's rescue threads,
  // which run it on another worker beside that worker's own closure of the same round; the
  // earliest round (first_step) is handed out first.
  bool orphan = false;
};

class ClosureQueue {
 public:
  ClosureQueue() = default;
  ClosureQueue(const ClosureQueue&) = delete;
  ClosureQueue& operator=(const ClosureQueue&) = delete;

  // Adds a closure for the current phase. REQUIRES: its id is unique within the phase.
  void Push(const Closure& closure);

  // Which closures a Take may hand out: kOwn, a worker's own dispatch (untargeted ones and those
  // targeted at it, never orphans); kOrphans, a rescue dispatch (orphans only).
  enum class TakeMode { kOwn, kOrphans };

  // Blocks until a closure that `worker` may run is waiting, then hands it out; returns nullopt
  // after `timeout`, on a fatal error or after Shutdown(). A worker marked lost (SetTargetLost)
  // is handed nothing until it is back.
  std::optional<Closure> Take(int worker, absl::Duration timeout, TakeMode mode = TakeMode::kOwn);

  // Sync mode: `worker` is lost (true) or back (false). While it is lost, closures targeted at it
  // (waiting, re-queued or pushed later) become orphans for the rescue dispatchers.
  void SetTargetLost(int worker, bool lost);

  // The worker that took `closure` finished it. Returns true the first time a closure id is
  // finished (its result counts) and false for a duplicate execution (its result must be dropped).
  // `record` (may be empty) runs only the first time, before any waiter can see the closure
  // finished, so results are recorded when WaitAllFinished returns; it must not call back into
  // the queue.
  bool Finish(const Closure& closure, const std::function<void()>& record = nullptr);

  // The worker that took `closure` failed (retryable): the closure goes back to the front.
  void Requeue(const Closure& closure);

  // Records a non-retryable failure: the first one wins, every waiter wakes up.
  void Fail(const absl::Status& status);

  // Blocks until every pushed closure is finished (OK), a fatal error was recorded (that error),
  // or `deadline` passes (DeadlineExceeded).
  absl::Status WaitAllFinished(absl::Time deadline);

  // Removes the closures nobody has taken yet (a phase ending early); running ones stay, and so
  // do re-queued ones that hold a data position (their batches were handed out already).
  void DropWaiting();

  // Forgets every closure of the phase, running ones too: their later Finish() counts nothing
  // and Requeue() drops them (a sync round whose model state was rolled back).
  void DropAll();

  // While paused, Take() hands nothing out (waiting closures stay; running ones go on): the chief
  // holds the workers while a lost ps is brought back. Resume() undoes it.
  void Pause();
  void Resume();
  bool paused() const;

  // Wakes every Take() for good (process shutdown).
  void Shutdown();

  int64_t pending() const;      // waiting to be taken
  int64_t unfinished() const;   // pushed and not finished yet (waiting or running)
  absl::Status error() const;

 private:
  mutable absl::Mutex mu_;
  std::deque<Closure> waiting_ ABSL_GUARDED_BY(mu_);
  std::set<int64_t> unfinished_ ABSL_GUARDED_BY(mu_);   // pushed, not finished
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::set<int> lost_targets_ ABSL_GUARDED_BY(mu_);
  // Makes `c` an orphan when its target is lost.
  void OrphanIfLostLocked(Closure* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_COORDINATOR_CLOSURE_QUEUE_H_
