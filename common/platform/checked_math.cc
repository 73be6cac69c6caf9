#include "common/platform/checked_math.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace pstrain {
namespace {

std::string Shape(absl::Span<const int64_t> dims) { return absl::StrCat("[", absl::StrJoin(dims, ","), "]"); }

absl::Status TooLarge(absl::string_view what, const std::string& detail) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": ", detail, ", more than pstrain can hold (at most 2^62 bytes)"));
}

// a op b for CheckedSizeProduct ('*') and CheckedSizeSum ('+').
absl::StatusOr<int64_t> CheckedSizeOp(int64_t a, char op, int64_t b, absl::string_view what) {
  int64_t r;
  if (a < 0 || b < 0) return absl::InvalidArgumentError(absl::StrCat(what, ": a size is negative"));
  const bool fits = op == '*' ? CheckedMul(a, b, &r) : CheckedAdd(a, b, &r);
  if (!fits || r > kMaxCheckedBytes) {
    const long double exact = op == '*' ? static_cast<long double>(a) * b : static_cast<long double>(a) + b;
    return TooLarge(what, absl::StrFormat("%d %c %d is about %.3Lg", a, op, b, exact));
  }
  return r;
}

}  // namespace

bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

absl::StatusOr<int64_t> CheckedNumElements(absl::Span<const int64_t> dims, absl::string_view what) {
  int64_t n = 1;
  bool overflow = false;
  long double approx = 1;  // only for the message
  for (int64_t d : dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": shape ", Shape(dims), " has a negative dimension"));
    }
    approx *= static_cast<long double>(d);
    if (!overflow && !CheckedMul(n, d, &n)) overflow = true;
  }
  if (approx == 0) return 0;  // a zero dimension: nothing overflows
  if (overflow || n > kMaxCheckedBytes) {
    return TooLarge(what, absl::StrFormat("shape %s has about %.3Lg elements", Shape(dims), approx));
  }
  return n;
}

absl::StatusOr<int64_t> CheckedNumBytes(absl::Span<const int64_t> dims, int64_t bytes_per_element,
                                        absl::string_view what) {
  absl::StatusOr<int64_t> n = CheckedNumElements(dims, what);
  if (!n.ok()) return n.status();
  int64_t bytes;
  if (!CheckedMul(*n, bytes_per_element, &bytes) || bytes > kMaxCheckedBytes) {
    return TooLarge(what, absl::StrFormat("shape %s needs about %.3Lg bytes", Shape(dims),
                                          static_cast<long double>(*n) * bytes_per_element));
  }
  return bytes;
}

absl::StatusOr<int64_t> CheckedSizeProduct(int64_t a, int64_t b, absl::string_view what) {
  return CheckedSizeOp(a, '*', b, what);
}

absl::StatusOr<int64_t> CheckedSizeSum(int64_t a, int64_t b, absl::string_view what) {
  return CheckedSizeOp(a, '+', b, what);
}

std::string FormatBytes(int64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return absl::StrCat(bytes, " bytes");
  return absl::StrFormat("%.1f %s (%d bytes)", v, units[u], bytes);
}

}  // namespace pstrain
