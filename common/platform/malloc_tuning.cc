#include "common/platform/malloc_tuning.h"

#include <malloc.h>

namespace pstrain {

bool KeepFreedBuffersForReuse() {
#if defined(__GLIBC__)
  // Setting either fixes both: glibc then stops moving the thresholds itself.
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, static_cast<int>(kKeepBufferBytes)) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, static_cast<int>(kKeepFreeBytes)) == 1;
  return mmap_ok && trim_ok;
#else
  return false;
#endif
}

}  // namespace pstrain
