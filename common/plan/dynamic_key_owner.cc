#include "common/plan/dynamic_key_owner.h"

namespace pstrain {

int DynamicKeyOwner(uint64_t key, int num_shards) {
  if (num_shards <= 1) return 0;
  constexpr uint64_t kPlacementSalt = 0x6A09E667F3BCC908ULL;
  return static_cast<int>(Mix64(key ^ kPlacementSalt) % static_cast<uint64_t>(num_shards));
}

}  // namespace pstrain
