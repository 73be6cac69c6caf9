#include "common/config/value_range.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config/json_util.h"

namespace pstrain {
namespace {

std::string WithNote(std::string message, const std::string& note) {
  return note.empty() ? message : absl::StrCat(message, " ", note);
}

// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

IntRange AnyInt() { return IntRange{}; }
IntRange IntAtLeast(int64_t lo, std::string note) {
  IntRange r;
  r.lo = lo;
  r.note = std::move(note);
  return r;
}
IntRange IntBetween(int64_t lo, int64_t hi, std::string note) { return IntRange{lo, hi, std::move(note)}; }
IntRange DimensionRange(std::string note) { return IntRange{1, kMaxDimension, std::move(note)}; }
NumberRange AnyNumber() { return NumberRange{}; }
NumberRange PositiveNumber(std::string note) {
  NumberRange r;
  r.lo = 0;
  r.lo_open = true;
  r.note = std::move(note);
  return r;
}
NumberRange NonNegativeNumber(std::string note) {
  NumberRange r;
  r.lo = 0;
  r.note = std::move(note);
  return r;
}
NumberRange NumberBetween(double lo, bool lo_open, double hi, bool hi_open, std::string note) {
  return NumberRange{lo, hi, lo_open, hi_open, std::move(note)};
}

absl::Status CheckInRange(int64_t value, const IntRange& range, absl::string_view name) {
  std::string bound;
  if (value < range.lo) {
    bound = range.lo == 1   ? "must be positive"
            : range.lo == 0 ? "must not be negative"
                            : absl::StrCat("must be at least ", range.lo);
  } else if (value > range.hi) {
    bound = absl::StrCat("must be at most ", range.hi);
  } else {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(WithNote(absl::StrCat(name, " ", bound, ", got ", value), range.note));
}

absl::Status CheckInRange(double value, const NumberRange& range, absl::string_view name) {
  std::string bound;
  if (!std::isfinite(value)) {
    bound = "must be a finite number";
  } else if (value < range.lo || (range.lo_open && value == range.lo)) {
    if (range.lo == 0) {
      bound = range.lo_open ? "must be positive" : "must not be negative";
    } else {
      bound = absl::StrCat(range.lo_open ? "must be greater than " : "must be at least ", range.lo);
    }
  } else if (value > range.hi || (range.hi_open && value == range.hi)) {
    bound = absl::StrCat(range.hi_open ? "must be less than " : "must be at most ", range.hi);
  } else {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(WithNote(absl::StrCat(name, " ", bound, ", got ", value), range.note));
}

std::string NearestName(absl::string_view name, const std::vector<std::string>& known) {
  if (name.size() > 64) return "";  // no typo of a short key; bounds the distance table
  std::string best;
  size_t best_distance = 0;
  for (const std::string& k : known) {
    const size_t d = EditDistance(name, k);
    if (best.empty() || d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  // A typo changes a few characters; anything further is another word.
  const size_t limit = std::max<size_t>(1, std::min(name.size(), best.size()) / 3);
  return !best.empty() && best_distance <= limit ? best : "";
}

std::string NotOneOfMessage(absl::string_view value, const std::vector<std::string>& allowed) {
  std::string out = absl::StrCat(QuotedExcerpt(value), " is not one of: ", absl::StrJoin(allowed, ", "));
  const std::string near = NearestName(value, allowed);
  if (!near.empty()) absl::StrAppend(&out, "; did you mean \"", near, "\"?");
  return out;
}

}  // namespace pstrain
