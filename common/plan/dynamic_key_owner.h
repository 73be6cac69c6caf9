// Placement of a dynamic table's keys on ps tasks, and the 64-bit mix the dynamic-table code shares.
// A dynamic table has no row ranges: its keys are arbitrary int64 (ids, or hashes of strings), so a
// key lives on the shard chosen by a hash of the key, which spreads both consecutive ids and the hot
// ids of a skewed distribution over all shards. In common/ because the ps (which checks and stores
// keys) and the worker (which routes each key to its shard) must agree on it.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_PLAN_DYNAMIC_KEY_OWNER_H_
#define PSTRAIN_COMMON_PLAN_DYNAMIC_KEY_OWNER_H_

#include <cstdint>

namespace pstrain {

// SplitMix64's finaliser: a bijection of 64-bit words whose output bits each depend on every input
// bit. Stable across versions: placement, initial values and the admission filter depend on it.
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The shard in [0, num_shards) holding `key`: Mix64(key XOR a fixed salt) modulo num_shards. The
// salt keeps placement independent of the mixes the initializer and the admission filter use.
// num_shards <= 0 is treated as 1 (every key on shard 0).
int DynamicKeyOwner(uint64_t key, int num_shards);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLAN_DYNAMIC_KEY_OWNER_H_
