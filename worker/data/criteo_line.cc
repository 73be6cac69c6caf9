#include "worker/data/criteo_line.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace pstrain {
namespace {

constexpr int kMaxFields = 10000;
constexpr int64_t kMaxLineBytesLimit = int64_t{1} << 30;

// log(1 + x) of the small counts most numeric fields hold, computed once.
constexpr int kLog1pTableSize = 1024;
const std::array<float, kLog1pTableSize>& Log1pTable() {
  static const std::array<float, kLog1pTableSize> table = [] {
    std::array<float, kLog1pTableSize> t{};
    for (int i = 0; i < kLog1pTableSize; ++i) t[i] = static_cast<float>(std::log1p(static_cast<double>(i)));
    return t;
  }();
  return table;
}

// 0..15 for a hex digit, -1 otherwise.
const std::array<int8_t, 256>& HexDigits() {
  static const std::array<int8_t, 256> table = [] {
    std::array<int8_t, 256> t;
    t.fill(-1);
    for (int c = '0'; c <= '9'; ++c) t[c] = static_cast<int8_t>(c - '0');
    for (int c = 'a'; c <= 'f'; ++c) t[c] = static_cast<int8_t>(c - 'a' + 10);
    for (int c = 'A'; c <= 'F'; ++c) t[c] = static_cast<int8_t>(c - 'A' + 10);
    return t;
  }();
  return table;
}

absl::Status FieldError(const CriteoFormat& format, int field, absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      // The field's bytes are not shown: a data file may be one nobody meant to share (a job spec
      // from elsewhere can name any file), and its errors must not echo it.
      absl::StrCat("field ", CriteoFieldName(format, field), " (", text.size(), " bytes): ", why));
}

// log(1 + max(x, 0)) of a decimal number; false when `text` is not a finite number.
bool ParseNumeric(absl::string_view text, float* out) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  // Fast path: an integer of up to 18 digits (every Criteo count), optionally negative.
  const bool negative = !text.empty() && text[0] == '-';
  const size_t first = negative ? 1 : 0;
  if (text.size() > first && text.size() - first <= 18) {
    int64_t value = 0;
    size_t i = first;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) value = value * 10 + (text[i] - '0');
    if (i == text.size()) {
      if (negative || value == 0) {
        *out = 0.0f;
      } else {
        *out =
            value < kLog1pTableSize ? Log1pTable()[value] : static_cast<float>(std::log1p(static_cast<double>(value)));
      }
      return true;
    }
  }
  // Anything else a decimal number may be: a fraction, an exponent, a long integer.
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return false;
  }
  *out = value > 0.0 ? static_cast<float>(std::log1p(value)) : 0.0f;
  return true;
}

// int(text, 16) % size, exact for any length; false on a character that is not a hex digit.
// size 0 (a dynamic table): int(text, 16) % 2^64 as an int64 bit pattern.
bool ParseHexId(absl::string_view text, int64_t size, int64_t* out) {
  const std::array<int8_t, 256>& digits = HexDigits();
  if (size == 0) {
    uint64_t value = 0;
    for (const char c : text) {
      const int d = digits[static_cast<unsigned char>(c)];
      if (d < 0) return false;
      value = (value << 4) | static_cast<uint64_t>(d);  // digits past 16 push the high ones out: % 2^64
    }
    *out = static_cast<int64_t>(value);
    return true;
  }
  const uint64_t modulus = static_cast<uint64_t>(size);
  uint64_t value = 0;
  size_t i = 0;
  // Up to 16 digits fit 64 bits exactly; past that, reduce modulo the table size at every digit
  // (in 128 bits, since value < modulus < 2^63 makes value * 16 + 15 < 2^67).
  for (; i < text.size() && i < 16; ++i) {
    const int d = digits[static_cast<unsigned char>(text[i])];
    if (d < 0) return false;
    value = (value << 4) | static_cast<uint64_t>(d);
  }
  value %= modulus;
  for (; i < text.size(); ++i) {
    const int d = digits[static_cast<unsigned char>(text[i])];
    if (d < 0) return false;
    value = static_cast<uint64_t>(((static_cast<unsigned __int128>(value) << 4) | static_cast<unsigned>(d)) % modulus);
  }
  *out = static_cast<int64_t>(value);
  return true;
}

absl::Status WrongFieldCount(const CriteoFormat& format, absl::string_view line) {
  const int64_t fields = 1 + static_cast<int64_t>(std::count(line.begin(), line.end(), '\t'));
  return absl::InvalidArgumentError(absl::StrCat("has ", fields, " tab-separated fields, want ", format.num_fields(),
                                                 " (label, I1..I", format.num_numeric, ", C1..C",
                                                 format.num_categorical, ")"));
}

}  // namespace

absl::Status ValidateCriteoFormat(const CriteoFormat& format) {
  if (format.num_numeric < 0 || format.num_numeric > kMaxFields || format.num_categorical < 0 ||
      format.num_categorical > kMaxFields) {
    return absl::InvalidArgumentError(absl::StrCat("a CTR line needs 0..", kMaxFields,
                                                   " numeric and categorical fields, got ", format.num_numeric, " and ",
                                                   format.num_categorical));
  }
  if (static_cast<int64_t>(format.table_sizes.size()) != format.num_categorical) {
    return absl::InvalidArgumentError(
        absl::StrCat("give one table size per categorical field: ", format.num_categorical, " fields, ",
                     format.table_sizes.size(), " table sizes"));
  }
  for (int f = 0; f < format.num_categorical; ++f) {
    if (format.table_sizes[f] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("the table of field ",
                                                     CriteoFieldName(format, 1 + format.num_numeric + f), " has ",
                                                     format.table_sizes[f],
                                                     " rows; it needs at least 1 (or 0: a dynamic table)"));
    }
  }
  if (format.max_line_bytes < 1 || format.max_line_bytes > kMaxLineBytesLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_line_bytes must be in 1..", kMaxLineBytesLimit, ", got ", format.max_line_bytes));
  }
  return absl::OkStatus();
}

std::string CriteoFieldName(const CriteoFormat& format, int index) {
  if (index == 0) return "label";
  if (index <= format.num_numeric) return absl::StrCat("I", index);
  return absl::StrCat("C", index - format.num_numeric);
}

absl::Status ParseCriteoLine(absl::string_view line, const CriteoFormat& format, float* label, float* numeric,
                             int64_t* ids) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const char* p = line.data();
  const char* const end = p + line.size();
  const int fields = format.num_fields();
  for (int f = 0; f < fields; ++f) {
    const char* tab = static_cast<const char*>(std::memchr(p, '\t', static_cast<size_t>(end - p)));
    const bool last = f + 1 == fields;
    if ((tab == nullptr) != last) return WrongFieldCount(format, line);
    const absl::string_view text(p, static_cast<size_t>((last ? end : tab) - p));
    if (f == 0) {
      if (text != "0" && text != "1") return FieldError(format, f, text, "the label must be 0 or 1");
      *label = text[0] == '1' ? 1.0f : 0.0f;
    } else if (f <= format.num_numeric) {
      float* slot = numeric + (f - 1);
      if (text.empty()) {
        *slot = 0.0f;
      } else if (!ParseNumeric(text, slot)) {
        return FieldError(format, f, text, "not a number");
      }
    } else {
      const int c = f - 1 - format.num_numeric;
      if (text.empty()) {
        ids[c] = 0;
      } else if (!ParseHexId(text, format.table_sizes[c], &ids[c])) {
        return FieldError(format, f, text, "not a hexadecimal id");
      }
    }
    p = last ? end : tab + 1;
  }
  return absl::OkStatus();
}

std::string QuoteExcerpt(absl::string_view text, size_t max_bytes) {
  const bool cut = text.size() > max_bytes;
  return absl::StrCat("\"", absl::CHexEscape(text.substr(0, max_bytes)), cut ? "...\"" : "\"");
}

}  // namespace pstrain
