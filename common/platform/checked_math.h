// Checked arithmetic for sizes that come from users, files and the network. Every product of
// dimensions (element counts, byte counts) that such a size feeds goes through these functions,
// so an overflow becomes an error naming the field, never a wrong size, a wrong message or an
// allocation of garbage.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_PLATFORM_CHECKED_MATH_H_
#define PSTRAIN_COMMON_PLATFORM_CHECKED_MATH_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace pstrain {

// The largest byte count any tensor, shard, file or budget may have: 2^62 leaves room to add a few
// of them and to convert to size_t without another check.
inline constexpr int64_t kMaxCheckedBytes = int64_t{1} << 62;

// a * b and a + b; false (and *out untouched) when the exact result does not fit int64.
bool CheckedMul(int64_t a, int64_t b, int64_t* out);
bool CheckedAdd(int64_t a, int64_t b, int64_t* out);

// Product of `dims` (1 for none). InvalidArgument naming `what` (e.g. "model.layers[2] (dense)")
// for a negative dimension or a product above kMaxCheckedBytes; the message gives the approximate
// product, so [2^40, 2^40] reads "about 1.2e+24 elements", never a wrapped-around number.
absl::StatusOr<int64_t> CheckedNumElements(absl::Span<const int64_t> dims, absl::string_view what);

// CheckedNumElements(dims) * bytes_per_element, with the same errors. REQUIRES: bytes_per_element >= 0.
absl::StatusOr<int64_t> CheckedNumBytes(absl::Span<const int64_t> dims, int64_t bytes_per_element,
                                        absl::string_view what);

// a * b and a + b of non-negative sizes; InvalidArgument naming `what` when the result exceeds
// kMaxCheckedBytes (or either operand is negative).
absl::StatusOr<int64_t> CheckedSizeProduct(int64_t a, int64_t b, absl::string_view what);
absl::StatusOr<int64_t> CheckedSizeSum(int64_t a, int64_t b, absl::string_view what);

// "12.0 GiB (12884901888 bytes)" for messages about memory.
std::string FormatBytes(int64_t bytes);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLATFORM_CHECKED_MATH_H_
