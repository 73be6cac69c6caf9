// Deterministic random draws for data generators: a SplitMix64 counter stream (MixSeed from
// shard_iterator.h) with our own uniform and normal transforms, so a seed gives the same numbers
// with every standard library (std::*_distribution do not promise that).
// Thread-safety: a value; one stream per thread.
#ifndef PSTRAIN_WORKER_DATA_RANDOM_STREAM_H_
#define PSTRAIN_WORKER_DATA_RANDOM_STREAM_H_

#include <cmath>
#include <cstdint>

#include "worker/data/shard_iterator.h"

namespace pstrain {

// Uniform in (0, 1) from the top 53 bits of `bits` (never 0, so log() of it is finite).
inline double UniformFromBits(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }

// A standard normal from two independent 64-bit words (Box-Muller).
inline double NormalFromBits(uint64_t a, uint64_t b) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return std::sqrt(-2.0 * std::log(UniformFromBits(a))) * std::cos(kTwoPi * UniformFromBits(b));
}

// A standard normal that is a pure function of `key` (e.g. a hash of seed, field and id).
inline double NormalFromKey(uint64_t key) { return NormalFromBits(MixSeed(key, 1), MixSeed(key, 2)); }

class RandomStream {
 public:
  explicit RandomStream(uint64_t seed) : seed_(seed) {}
  uint64_t Next() { return MixSeed(seed_, counter_++); }
  double Uniform() { return UniformFromBits(Next()); }
  double Normal() {
    const uint64_t a = Next();
    return NormalFromBits(a, Next());
  }

 private:
  uint64_t seed_;
  uint64_t counter_ = 0;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_RANDOM_STREAM_H_
