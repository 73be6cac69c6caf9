#include "worker/step/push_in_flight.h"

#include <utility>

namespace pstrain {

PushInFlight::~PushInFlight() {
  if (active()) thread_.join();
}

void PushInFlight::Start(std::function<absl::StatusOr<int64_t>()> push) {
  thread_ = std::thread([this, push = std::move(push)] { result_ = push(); });
}

absl::StatusOr<int64_t> PushInFlight::Wait() {
  thread_.join();
  return std::move(result_);
}

}  // namespace pstrain
