#include "ps/store/admission_filter.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/plan/dynamic_key_owner.h"

namespace pstrain {
namespace {

constexpr uint64_t kRowSalts[8] = {0x243F6A8885A308D3ULL, 0x13198A2E03707344ULL, 0xA4093822299F31D0ULL,
                                   0x082EFA98EC4E6C89ULL, 0x452821E638D01377ULL, 0xBE5466CF34E90C6CULL,
                                   0xC0AC29B7C97C50DDULL, 0x3F84D5B5B5470917ULL};

}  // namespace

AdmissionFilter::AdmissionFilter(int64_t width, int depth)
    : width_(std::max<int64_t>(width, 1)),
      depth_(std::clamp(depth, 1, 8)),
      counters_(static_cast<size_t>(width_ * depth_), 0) {}

size_t AdmissionFilter::Cell(uint64_t key, int row) const {
  return static_cast<size_t>(row * width_) + static_cast<size_t>(Mix64(key ^ kRowSalts[row]) % width_);
}

int AdmissionFilter::Estimate(uint64_t key) const {
  int m = kMaxCount;
  for (int r = 0; r < depth_; ++r) m = std::min<int>(m, counters_[Cell(key, r)]);
  return m;
}

int AdmissionFilter::Add(uint64_t key) {
  size_t cells[8];
  int m = kMaxCount;
  for (int r = 0; r < depth_; ++r) {
    cells[r] = Cell(key, r);
    m = std::min<int>(m, counters_[cells[r]]);
  }
  if (m == kMaxCount) return m;
  // Conservative update: only the counters at the minimum rise; the others already overcount.
  for (int r = 0; r < depth_; ++r) {
    if (counters_[cells[r]] == m) counters_[cells[r]] = static_cast<uint8_t>(m + 1);
  }
  return m + 1;
}

absl::Status AdmissionFilter::Merge(const AdmissionFilter& other) {
  if (other.width_ != width_ || other.depth_ != depth_) {
    return absl::InvalidArgumentError(absl::StrCat("admission filters of different sizes (", depth_, " x ", width_,
                                                   " and ", other.depth_, " x ", other.width_, ") cannot merge"));
  }
  for (size_t i = 0; i < counters_.size(); ++i) {
    counters_[i] = static_cast<uint8_t>(std::min<int>(kMaxCount, counters_[i] + other.counters_[i]));
  }
  return absl::OkStatus();
}

absl::Status AdmissionFilter::SetCounters(std::vector<uint8_t> counters) {
  if (counters.size() != counters_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("admission filter of ", depth_, " x ", width_, " counters given ", counters.size(), " counters"));
  }
  counters_ = std::move(counters);
  return absl::OkStatus();
}

}  // namespace pstrain
