// A 64-bit checksum for checkpoint files: XXH64 (Yann Collet's xxHash, seed 0), written here so
// checkpoints need no extra dependency. Fast enough (several GB/s) to verify every file on restore.
// Thread-safety: pure function.
#ifndef PSTRAIN_PS_CHECKSUM_H_
#define PSTRAIN_PS_CHECKSUM_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace pstrain {

// XXH64 of `data` with seed 0 (the reference test vector: "" -> 0xEF46DB3751D8E999).
uint64_t Checksum64(absl::string_view data);

// The same checksum over data that arrives in pieces (a file read or written in chunks):
// Update(a); Update(b); Digest() == Checksum64(a + b). Not thread-safe.
class Checksum64Stream {
 public:
  void Update(absl::string_view data);
  uint64_t Digest() const;

 private:
  void Stripe(const char* p);  // one 32-byte stripe into the four lanes

  uint64_t lanes_[4];
  uint64_t total_ = 0;
  char buffer_[32];
  size_t buffered_ = 0;
  bool initialized_ = false;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_CHECKSUM_H_
