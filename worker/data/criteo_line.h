// One line of Criteo's TSV layout (Kaggle Display Advertising Challenge `train.txt`):
//
//   label \t I1 .. I{num_numeric} \t C1 .. C{num_categorical}      (13 and 26 in Criteo's data)
//
// label: exactly "0" or "1". Numeric field: a decimal number (Criteo's are integer counts, some
// -1), transformed to log(1 + max(x, 0)); empty = 0; "nan", "inf" and numbers out of double's
// range are bad. Categorical field: hexadecimal digits (either case, no "0x" or sign), hashed
// into its table as DLRM's --max-ind-range does: int(field, 16) % table_size; empty = 0. Ids of
// any length hash exactly as that big-integer modulo (reduced digit by digit past 16 digits), so
// they never overflow and agree with Python's int(x, 16) % size. Table size 0 (a dynamic table)
// keeps the id whole: int(field, 16) as a 64-bit pattern read as int64 (16 digits from 8000...
// up are negative); an id of more than 16 digits keeps its low 64 bits (int(field, 16) % 2^64,
// its last 16 digits), so leading zeros change nothing; empty = 0.
// Thread-safety: pure functions over caller-owned memory.
#ifndef PSTRAIN_WORKER_DATA_CRITEO_LINE_H_
#define PSTRAIN_WORKER_DATA_CRITEO_LINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pstrain {

struct CriteoFormat {
  int num_numeric = 13;
  int num_categorical = 26;
  std::vector<int64_t> table_sizes;  // one per categorical field, each >= 0 (0: dynamic, ids kept whole)
  // A longer line is bad (a Criteo line is a few hundred bytes): it bounds what one line may
  // make the reader hold, whatever the input.
  int64_t max_line_bytes = 1 << 16;

  int num_fields() const { return 1 + num_numeric + num_categorical; }
};

// InvalidArgument unless 0 <= num_numeric, num_categorical <= 10000, table_sizes has one entry
// >= 0 per categorical field (0 = dynamic) and 1 <= max_line_bytes <= 1 GiB.
absl::Status ValidateCriteoFormat(const CriteoFormat& format);

// "label", "I3" or "C7": the name of field `index` (0 = label) in Criteo's documentation.
std::string CriteoFieldName(const CriteoFormat& format, int index);

// Parses `line` (without its '\n'; a trailing '\r' is ignored) into label, numeric[num_numeric]
// and ids[num_categorical]. Returns InvalidArgument naming the field and quoting a bounded
// excerpt of it (e.g. `field I3 is "12x": not a number`); the caller adds file:line. On error the
// outputs hold partial values. REQUIRES: ValidateCriteoFormat(format) is OK.
absl::Status ParseCriteoLine(absl::string_view line, const CriteoFormat& format, float* label, float* numeric,
                             int64_t* ids);

// At most `max_bytes` of `text`, C-escaped (tabs show as \t), in quotes, with "..." when cut:
// how error messages quote input.
std::string QuoteExcerpt(absl::string_view text, size_t max_bytes = 64);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_CRITEO_LINE_H_
