// A 64-bit checksum for checkpoint files: XXH64 (Yann Collet's xxHash, seed 0), written here so
// checkpoints need no extra dependency. Fast enough (several GB/s) to verify every file on restore.
// Thread-safety: pure function.
#ifndef PSTRAIN_PS_CHECKSUM_H_
#define PSTRAIN_PS_CHECKSUM_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace pstrain {

// XXH64 of `data` with seed 0 (the reference test vector: "" -> 0xEF46DB3751D8E999).
uint64_t Checksum64(absl::string_view data);

}  // namespace pstrain

#endif  // PSTRAIN_PS_CHECKSUM_H_
