// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord framing, and
// TFRecord's mask of it. SSE4.2's crc32 instruction when the CPU has it, else a table; both give
// the same values (the unit tests check the published test vectors on both).
// Thread-safety: pure functions.
#ifndef PSTRAIN_WORKER_DATA_CRC32C_H_
#define PSTRAIN_WORKER_DATA_CRC32C_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace pstrain {

// CRC-32C of `data` continued from `crc` (the CRC of the bytes before; 0 to start).
uint32_t Crc32cExtend(uint32_t crc, absl::string_view data);
inline uint32_t Crc32c(absl::string_view data) { return Crc32cExtend(0, data); }

// The table-only implementation, whatever the CPU (for tests comparing the two).
uint32_t Crc32cExtendPortable(uint32_t crc, absl::string_view data);

// TFRecord stores masked CRCs, since a CRC of data that holds CRCs is weak: rotate right by 15
// bits and add a constant. UnmaskCrc32c inverts it.
inline uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t UnmaskCrc32c(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_CRC32C_H_
