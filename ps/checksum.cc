#include "ps/checksum.h"

#include <algorithm>
#include <cstring>

namespace pstrain {
namespace {

constexpr uint64_t kP1 = 11400714785074694791ULL;
constexpr uint64_t kP2 = 14029467366897019727ULL;
constexpr uint64_t kP3 = 1609587929392839161ULL;
constexpr uint64_t kP4 = 9650029242287828579ULL;
constexpr uint64_t kP5 = 2870177450012600261ULL;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // little-endian hosts only, as the tensor wire format
  return v;
}

inline uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline uint64_t Round(uint64_t acc, uint64_t input) {
  acc += input * kP2;
  acc = Rotl(acc, 31);
  return acc * kP1;
}

inline uint64_t MergeRound(uint64_t acc, uint64_t val) {
  acc ^= Round(0, val);
  return acc * kP1 + kP4;
}

// The end of XXH64: `h` (the merged lanes, or kP5 for inputs under 32 bytes, plus the length)
// with the last < 32 bytes folded in, then the avalanche.
uint64_t Finish(uint64_t h, const char* p, const char* end) {
  for (; p + 8 <= end; p += 8) h = Rotl(h ^ Round(0, Load64(p)), 27) * kP1 + kP4;
  if (p + 4 <= end) {
    h = Rotl(h ^ (static_cast<uint64_t>(Load32(p)) * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p) h = Rotl(h ^ (static_cast<uint64_t>(static_cast<uint8_t>(*p)) * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

uint64_t MergeLanes(const uint64_t v[4]) {
  uint64_t h = Rotl(v[0], 1) + Rotl(v[1], 7) + Rotl(v[2], 12) + Rotl(v[3], 18);
  for (int i = 0; i < 4; ++i) h = MergeRound(h, v[i]);
  return h;
}

}  // namespace

void Checksum64Stream::Stripe(const char* p) {
  for (int i = 0; i < 4; ++i) lanes_[i] = Round(lanes_[i], Load64(p + 8 * i));
}

void Checksum64Stream::Update(absl::string_view data) {
  if (!initialized_) {
    lanes_[0] = kP1 + kP2;
    lanes_[1] = kP2;
    lanes_[2] = 0;
    lanes_[3] = 0 - kP1;
    initialized_ = true;
  }
  total_ += data.size();
  const char* p = data.data();
  const char* const end = p + data.size();
  if (buffered_ > 0) {
    const size_t take = std::min<size_t>(32 - buffered_, data.size());
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    if (buffered_ < 32) return;
    Stripe(buffer_);
    buffered_ = 0;
  }
  for (; p + 32 <= end; p += 32) Stripe(p);
  std::memcpy(buffer_, p, static_cast<size_t>(end - p));
  buffered_ = static_cast<size_t>(end - p);
}

uint64_t Checksum64Stream::Digest() const {
  if (total_ < 32) return Checksum64(absl::string_view(buffer_, buffered_));
  return Finish(MergeLanes(lanes_) + total_, buffer_, buffer_ + buffered_);
}

uint64_t Checksum64(absl::string_view data) {
  const char* p = data.data();
  const char* const end = p + data.size();
  uint64_t h = kP5;
  if (data.size() >= 32) {
    uint64_t v[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
    for (; p + 32 <= end; p += 32) {
      for (int i = 0; i < 4; ++i) v[i] = Round(v[i], Load64(p + 8 * i));
    }
    h = MergeLanes(v);
  }
  return Finish(h + static_cast<uint64_t>(data.size()), p, end);
}

}  // namespace pstrain
