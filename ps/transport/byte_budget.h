// Bytes a receiver has agreed to take in but not yet received, shared by all its connections: the
// bound on what peers' announcements can make the ps allocate, whatever they announce and however
// slowly they deliver. A frame's message grows only as its bytes arrive, each piece taken from
// the message budget (a connection that finds it spent is closed); a call's payload is reserved
// whole before its buffers exist and given back once it arrived (a call that finds no room waits,
// holding no thread, until some is given back).
// Thread-safety: thread-safe; the room callback runs on the thread that gives bytes back, with no
// lock of the budget held.
#ifndef PSTRAIN_PS_TRANSPORT_BYTE_BUDGET_H_
#define PSTRAIN_PS_TRANSPORT_BYTE_BUDGET_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace pstrain {

class ByteBudget {
 public:
  explicit ByteBudget(int64_t limit) : limit_(limit) {}

  // Takes `n` bytes, or ResourceExhausted when that would pass the limit.
  absl::Status TryTake(int64_t n);
  // Takes `n` bytes when they fit, or when nothing is taken (so one request larger than the limit
  // still proceeds, alone). False otherwise: wait for room (generation() changes when some is
  // given back).
  bool TryReserve(int64_t n);
  // Gives back bytes taken before, then runs the room callback.
  void Give(int64_t n);
  int64_t taken() const;
  // Counts the calls of Give: a waiter that read it before a failed TryReserve and finds it
  // unchanged knows no room came since.
  int64_t generation() const;
  // Runs after every Give (set once, before the budget is shared).
  void set_on_room(std::function<void()> on_room) { on_room_ = std::move(on_room); }

 private:
  const int64_t limit_;
  std::function<void()> on_room_;
  mutable absl::Mutex mu_;
  int64_t taken_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_BYTE_BUDGET_H_
