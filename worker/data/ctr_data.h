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

// The ids of one bag field (a multi-hot feature, job_spec.h TfExampleBagSpec) for a run of
// examples, in CSR form: example e's ids are ids[offsets[e] .. offsets[e + 1]), with their
// weights when the field has them. The field's column of the fixed ids holds 0 and is not read.
struct IdBags {
  int field = 0;                 // the model field
  std::vector<int64_t> offsets;  // examples + 1 entries, offsets[0] == 0, non-decreasing
  std::vector<int64_t> ids;      // each in [0, the field's table size)
  std::vector<float> weights;    // empty (each id weighs 1) or one per id, finite and >= 0
  int64_t examples() const { return offsets.empty() ? 0 : static_cast<int64_t>(offsets.size()) - 1; }
  int64_t Bytes() const {
    return static_cast<int64_t>(sizeof(int64_t) * (offsets.size() + ids.size()) + sizeof(float) * weights.size());
  }
  // Appends example `e` of `from` (same field) to this run.
  void AppendExample(const IdBags& from, int64_t e) {
    const int64_t begin = from.offsets[e], end = from.offsets[e + 1];
    if (offsets.empty()) offsets.push_back(0);
    ids.insert(ids.end(), from.ids.begin() + begin, from.ids.begin() + end);
    if (!from.weights.empty()) weights.insert(weights.end(), from.weights.begin() + begin, from.weights.begin() + end);
    offsets.push_back(static_cast<int64_t>(ids.size()));
  }
  // An empty run of the same field (and weightedness).
  void ClearExamples() {
    offsets.assign(1, 0);
    ids.clear();
    weights.clear();
  }
};

struct CtrData {
  int64_t size = 0;  // examples
  int num_numeric = 0;
  int num_categorical = 0;
  std::vector<float> labels;   // size values, each 0 or 1
  std::vector<float> numeric;  // size * num_numeric, row-major: log(1 + max(x, 0)), empty = 0
  std::vector<int64_t> ids;    // size * num_categorical, row-major: in [0, that field's table size)
  std::vector<IdBags> bags;    // one per bag field (none for fixed-length fields), in field order
  // Lines skipped as bad (only with skip_bad_lines) and the error the first of them would have
  // been, so a report can say what was wrong ("" when none was skipped).
  int64_t bad_lines_skipped = 0;
  std::string first_bad_line;

  // Bytes the examples take: size * (4 + 4 * num_numeric + 8 * num_categorical) plus the bags'.
  int64_t ExampleBytes() const {
    int64_t bytes = size * static_cast<int64_t>(sizeof(float) * (1 + num_numeric) + sizeof(int64_t) * num_categorical);
    for (const IdBags& bag : bags) bytes += bag.Bytes();
    return bytes;
  }
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_CTR_DATA_H_
