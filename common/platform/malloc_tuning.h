// How a ps or worker process asks glibc's malloc to keep the memory of freed tensor-sized buffers.
//
// Every push, pull and replica forward allocates buffers of the size of a shard (hundreds of KiB
// to MiB) and frees them a moment later. With glibc's defaults such buffers are mmapped or the
// heap top is trimmed back to the OS, so the next one faults in fresh zeroed pages: measured on
// the cnn job at 2 ps with ps_replicas 1, page faults, madvise and brk were a fifth of the ps's
// CPU time.
// Thread-safety: call once at the start of main, before any thread starts.
#ifndef PSTRAIN_COMMON_PLATFORM_MALLOC_TUNING_H_
#define PSTRAIN_COMMON_PLATFORM_MALLOC_TUNING_H_

#include <cstddef>

namespace pstrain {

// Allocations below `kKeepBufferBytes` come from the heap and are reused; freed memory at the heap
// top is returned to the OS only beyond `kKeepFreeBytes`. Larger buffers (a big shard's values)
// are still mmapped and unmapped on free. Returns false where the C library refused (the process
// runs on with its defaults).
inline constexpr size_t kKeepBufferBytes = size_t{32} << 20;
inline constexpr size_t kKeepFreeBytes = size_t{256} << 20;
bool KeepFreedBuffersForReuse();

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLATFORM_MALLOC_TUNING_H_
