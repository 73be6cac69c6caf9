// The range vocabulary every value from a user goes through (job-spec fields, command-line flags):
// a range is declared next to where the value is read, and a value outside it is an
// InvalidArgument naming the field, the bound it broke and, where the rule comes from TensorFlow,
// Keras or PyTorch, which check it follows ("optimizer.beta_1 must be less than 1, got 1 (...)").
// Thread-safety: values and pure functions.
#ifndef PSTRAIN_COMMON_CONFIG_VALUE_RANGE_H_
#define PSTRAIN_COMMON_CONFIG_VALUE_RANGE_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pstrain {

// Largest dimension, unit count, batch, example count or shard count a job may give: sizes are
// int32 in the kernels and on the wire. The memory budget bounds their products.
inline constexpr int64_t kMaxDimension = (int64_t{1} << 31) - 1;
// Most compute threads or local replicas one process starts.
inline constexpr int64_t kMaxThreads = 1024;

struct IntRange {
  int64_t lo = std::numeric_limits<int64_t>::min();
  int64_t hi = std::numeric_limits<int64_t>::max();
  std::string note;  // why, e.g. "(as Keras's Dense)"; appended to the message
};

// Numbers are always finite; the bounds are open or closed.
struct NumberRange {
  double lo = -std::numeric_limits<double>::max();
  double hi = std::numeric_limits<double>::max();
  bool lo_open = false, hi_open = false;
  std::string note;
};

IntRange AnyInt();
IntRange IntAtLeast(int64_t lo, std::string note = "");
IntRange IntBetween(int64_t lo, int64_t hi, std::string note = "");
// [1, kMaxDimension]: units, filters, kernel sizes, input dimensions, batch and example counts.
IntRange DimensionRange(std::string note = "");
NumberRange AnyNumber();
NumberRange PositiveNumber(std::string note = "");     // (0, max]
NumberRange NonNegativeNumber(std::string note = "");  // [0, max]
NumberRange NumberBetween(double lo, bool lo_open, double hi, bool hi_open, std::string note = "");

// OK when `value` is in `range`; otherwise InvalidArgument "<name> must be positive, got 0 <note>"
// (the bound broken: "positive", "non-negative", "at least N", "at most N", "less than N", ...).
absl::Status CheckInRange(int64_t value, const IntRange& range, absl::string_view name);
absl::Status CheckInRange(double value, const NumberRange& range, absl::string_view name);

// The known name closest to `name` by edit distance, when close enough to be a likely typo
// ("optimiser" -> "optimizer"); "" otherwise.
std::string NearestName(absl::string_view name, const std::vector<std::string>& known);

// ` "x" is not one of: a, b, c` plus `; did you mean "b"?` when one is close, for messages about a
// value that must be one of `allowed`.
std::string NotOneOfMessage(absl::string_view value, const std::vector<std::string>& allowed);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_VALUE_RANGE_H_
