#include "ps/transport/byte_budget.h"

#include "absl/strings/str_cat.h"

namespace pstrain {

absl::Status ByteBudget::TryTake(int64_t n) {
  absl::MutexLock l(&mu_);
  if (n > limit_ - taken_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("more than ", limit_, " bytes announced and not yet delivered on the tensor channel"));
  }
  taken_ += n;
  return absl::OkStatus();
}

bool ByteBudget::TryReserve(int64_t n) {
  absl::MutexLock l(&mu_);
  if (taken_ != 0 && n > limit_ - taken_) return false;
  taken_ += n;
  return true;
}

void ByteBudget::Give(int64_t n) {
  {
    absl::MutexLock l(&mu_);
    taken_ -= n;
    ++generation_;
  }
  if (on_room_) on_room_();
}

int64_t ByteBudget::taken() const {
  absl::MutexLock l(&mu_);
  return taken_;
}

int64_t ByteBudget::generation() const {
  absl::MutexLock l(&mu_);
  return generation_;
}

}  // namespace pstrain
