#include "worker/data/crc32c.h"

#include <array>
#include <cstring>

namespace pstrain {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // Castagnoli, bit-reversed

// kTables[k][b]: the CRC of byte b followed by k zero bytes, for slicing by 8.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

Tables MakeTables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ ((crc & 1) ? kPolynomial : 0);
    t[0][b] = crc;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}

const Tables& GetTables() {
  static const Tables tables = MakeTables();
  return tables;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, const unsigned char* p, size_t n) {
  uint64_t c = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = __builtin_ia32_crc32qi(c32, *p);
  return ~c32;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32cExtendPortable(uint32_t crc, absl::string_view data) {
  const Tables& t = GetTables();
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  uint32_t c = ~crc;
  for (; n >= 8; n -= 8, p += 8) {  // little-endian byte order, as x86 and the format have it
    const uint32_t lo = c ^ (uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][p[4]] ^
        t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
  }
  for (; n > 0; --n, ++p) c = (c >> 8) ^ t[0][(c ^ *p) & 0xff];
  return ~c;
}

uint32_t Crc32cExtend(uint32_t crc, absl::string_view data) {
#if defined(__x86_64__)
  if (HasSse42()) return ExtendSse42(crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
#endif
  return Crc32cExtendPortable(crc, data);
}

}  // namespace pstrain
