// PushInFlight: one push running on a thread of its own while its caller goes on, so a worker's
// next step pulls and computes while the previous step's push waits for its answer (with
// ps_replicas, the primary answers only once its backup has the update).
// Thread-safety: one thread calls Start, Wait and the destructor.
#ifndef PSTRAIN_WORKER_STEP_PUSH_IN_FLIGHT_H_
#define PSTRAIN_WORKER_STEP_PUSH_IN_FLIGHT_H_

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/status/statusor.h"

namespace pstrain {

class PushInFlight {
 public:
  PushInFlight() = default;
  // Waits for a push still running: what it reads must outlive this object.
  ~PushInFlight();
  PushInFlight(const PushInFlight&) = delete;
  PushInFlight& operator=(const PushInFlight&) = delete;

  // Runs `push` on a new thread. REQUIRES: !active().
  void Start(std::function<absl::StatusOr<int64_t>()> push);
  // A push was started and not waited for.
  bool active() const { return thread_.joinable(); }
  // Waits for the push and returns its result. REQUIRES: active().
  absl::StatusOr<int64_t> Wait();

 private:
  std::thread thread_;
  absl::StatusOr<int64_t> result_ = int64_t{0};  // written by thread_, read after joining it
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_STEP_PUSH_IN_FLIGHT_H_
