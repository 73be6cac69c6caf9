#include "common/graph/npy_int64.h"

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace pstrain {
namespace {

constexpr absl::string_view kMagic("\x93NUMPY", 6);
constexpr size_t kMaxHeaderBytes = 64 << 10;

absl::Status Bad(const std::string& what, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": ", problem, "; want a .npy vector of int64 keys (numpy.save of an int64 array)"));
}

// The value of `key` in the header dict: the text after "'key':" up to the next top-level ',' or
// '}' (a tuple's commas are inside parentheses).
std::string HeaderValue(absl::string_view header, absl::string_view key) {
  const std::string quoted = absl::StrCat("'", key, "'");
  size_t at = header.find(quoted);
  if (at == absl::string_view::npos) return "";
  at = header.find(':', at + quoted.size());
  if (at == absl::string_view::npos) return "";
  int depth = 0;
  std::string value;
  for (size_t i = at + 1; i < header.size(); ++i) {
    const char c = header[i];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
    if (c != ' ') value.push_back(c);
  }
  return value;
}

}  // namespace

std::string NpyInt64Vector(absl::Span<const int64_t> values) {
  std::string header = absl::StrCat("{'descr': '<i8', 'fortran_order': False, 'shape': (", values.size(), ",), }");
  // magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64 and
  // ended by a newline, as numpy writes it.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  for (int64_t v : values) {
    const uint64_t u = static_cast<uint64_t>(v);
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<char>((u >> (8 * b)) & 0xff));
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ParseNpyIntVector(absl::string_view bytes, const std::string& what) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic) return Bad(what, "not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_bytes = 0, start = 0;
  if (major == 1) {
    header_bytes = static_cast<unsigned char>(bytes[8]) | static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Bad(what, "the file ends inside its header");
    for (int b = 0; b < 4; ++b) header_bytes |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + b])) << (8 * b);
    start = 12;
  } else {
    return Bad(what, absl::StrCat(".npy format version ", major, " is not 1, 2 or 3"));
  }
  if (header_bytes > kMaxHeaderBytes) return Bad(what, absl::StrCat("a header of ", header_bytes, " bytes"));
  if (bytes.size() < start + header_bytes) return Bad(what, "the file ends inside its header");
  const absl::string_view header = bytes.substr(start, header_bytes);
  const std::string descr = HeaderValue(header, "descr"), order = HeaderValue(header, "fortran_order");
  std::string shape = HeaderValue(header, "shape");
  size_t width = 0;
  if (descr == "'<i8'") {
    width = 8;
  } else if (descr == "'<i4'") {
    width = 4;
  } else {
    return Bad(what, absl::StrCat("dtype ", descr.empty() ? "(none)" : descr, " is not int64 ('<i8') or int32 ('<i4')"));
  }
  if (order != "False") return Bad(what, "the array is in Fortran order");
  absl::string_view s(shape);
  uint64_t n = 0;
  if (!absl::ConsumePrefix(&s, "(") || !absl::ConsumeSuffix(&s, ")") || !absl::ConsumeSuffix(&s, ",") ||
      !absl::SimpleAtoi(s, &n)) {
    return Bad(what, absl::StrCat("shape ", shape.empty() ? "(none)" : shape, " is not a vector (n,)"));
  }
  const absl::string_view data = bytes.substr(start + header_bytes);
  if (data.size() / width < n || data.size() != n * width) {
    return Bad(what, absl::StrCat(data.size(), " bytes of data for ", n, " values of ", width, " bytes"));
  }
  std::vector<int64_t> values(n);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t u = 0;
    for (size_t b = 0; b < width; ++b) u |= static_cast<uint64_t>(static_cast<unsigned char>(data[i * width + b])) << (8 * b);
    values[i] = width == 8 ? static_cast<int64_t>(u) : static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(u)));
  }
  return values;
}

}  // namespace pstrain
