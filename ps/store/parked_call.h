// A ps call waiting on several shards (a sync push waiting for its steps to apply, a pull waiting
// for versions): finishes once every part reported OK, at the first failed part, or at its
// deadline — whichever comes first — and runs its completion exactly once, outside any lock.
// Thread-safety: all methods are thread-safe.
#ifndef PSTRAIN_PS_STORE_PARKED_CALL_H_
#define PSTRAIN_PS_STORE_PARKED_CALL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "ps/store/deadline_timer.h"

namespace pstrain {

class ParkedCall : public std::enable_shared_from_this<ParkedCall> {
 public:
  // `on_success(versions)` fills the response (versions reported by the parts, by index) and
  // returns the call's status; `done` gets the final status. `describe_timeout()` builds the
  // DeadlineExceeded status; `on_shutdown` the status when the timer shuts down.
  struct Handlers {
    std::function<absl::Status(const std::vector<int64_t>& versions)> on_success;
    std::function<void(absl::Status)> done;
    std::function<absl::Status()> describe_timeout;
    std::function<absl::Status()> on_shutdown;
  };

  // REQUIRES: parts >= 1.
  static std::shared_ptr<ParkedCall> Create(int parts, Handlers handlers);

  // Arms the deadline on `timer` (not owned; must outlive the call's deadline).
  void Arm(DeadlineTimer* timer, absl::Time deadline);
  // Part `index` finished: a version (OK) or an error (finishes the call with it).
  void PartDone(int index, absl::StatusOr<int64_t> version);

 private:
  ParkedCall(int parts, Handlers handlers);
  void Finish(absl::Status status, bool succeeded);

  absl::Mutex mu_;
  int remaining_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int64_t> versions_ ABSL_GUARDED_BY(mu_);
  DeadlineTimer* timer_ ABSL_GUARDED_BY(mu_) = nullptr;
  int64_t timer_id_ ABSL_GUARDED_BY(mu_) = 0;
  Handlers handlers_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_PARKED_CALL_H_
