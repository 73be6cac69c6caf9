#include "ps/store/parked_call.h"

namespace pstrain {

std::shared_ptr<ParkedCall> ParkedCall::Create(int parts, Handlers handlers) {
  return std::shared_ptr<ParkedCall>(new ParkedCall(parts, std::move(handlers)));
}

ParkedCall::ParkedCall(int parts, Handlers handlers)
    : remaining_(parts), versions_(static_cast<size_t>(parts), 0), handlers_(std::move(handlers)) {}

void ParkedCall::Arm(DeadlineTimer* timer, absl::Time deadline) {
  std::weak_ptr<ParkedCall> weak = weak_from_this();
  const int64_t id = timer->Schedule(deadline, [weak](bool shutting_down) {
    std::shared_ptr<ParkedCall> self = weak.lock();
    if (self == nullptr) return;
    self->Finish(shutting_down ? self->handlers_.on_shutdown() : self->handlers_.describe_timeout(), false);
  });
  absl::MutexLock l(&mu_);
  timer_ = timer;
  timer_id_ = id;
}

void ParkedCall::PartDone(int index, absl::StatusOr<int64_t> version) {
  if (!version.ok()) {
    Finish(version.status(), false);
    return;
  }
  {
    absl::MutexLock l(&mu_);
    if (finished_) return;
    versions_[static_cast<size_t>(index)] = *version;
    if (--remaining_ > 0) return;
  }
  Finish(absl::OkStatus(), true);
}

void ParkedCall::Finish(absl::Status status, bool succeeded) {
  DeadlineTimer* timer;
  int64_t timer_id;
  std::vector<int64_t> versions;
  {
    absl::MutexLock l(&mu_);
    if (finished_) return;  // exactly one finisher
    finished_ = true;
    timer = timer_;
    timer_id = timer_id_;
    versions = versions_;
  }
  if (timer != nullptr) timer->Cancel(timer_id);
  if (succeeded) status = handlers_.on_success(versions);
  handlers_.done(std::move(status));
}

}  // namespace pstrain
