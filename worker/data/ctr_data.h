// Examples of a CTR data set in memory, column by column: one label, `num_numeric` numeric
// features (already transformed) and `num_categorical` ids (already hashed into their tables) per
// example. With Criteo's 13 + 26 fields an example costs 4 + 4 * 13 + 8 * 26 = 264 bytes.
// Thread-safety: a value; once filled it is read-only and may be shared across threads.
#ifndef PSTRAIN_WORKER_DATA_CTR_DATA_H_
#define PSTRAIN_WORKER_DATA_CTR_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

namespace pstrain {

struct CtrData {
  int64_t size = 0;  // examples
  int num_numeric = 0;
  int num_categorical = 0;
  std::vector<float> labels;   // size values, each 0 or 1
  std::vector<float> numeric;  // size * num_numeric, row-major: log(1 + max(x, 0)), empty = 0
  std::vector<int64_t> ids;    // size * num_categorical, row-major: in [0, that field's table size)
  // Lines skipped as bad (only with skip_bad_lines) and the error the first of them would have
  // been, so a report can say what was wrong ("" when none was skipped).
  int64_t bad_lines_skipped = 0;
  std::string first_bad_line;

  // Bytes the examples take: size * (4 + 4 * num_numeric + 8 * num_categorical).
  int64_t ExampleBytes() const {
    return size * static_cast<int64_t>(sizeof(float) * (1 + num_numeric) + sizeof(int64_t) * num_categorical);
  }
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_CTR_DATA_H_
