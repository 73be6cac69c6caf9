// The most bytes a ps's dynamic table holds per row beside the row's values and optimizer slots:
// its 16-byte row header and its key's hash-map slot (ps/store/dynamic_table.h says how the bound
// is reached; DynamicTable::kMaxOverheadBytesPerRow is checked equal to this there). Plans budget
// it for every row of a dynamic shard's cap (memory_budget.h), and the admission filter's counters
// once per shard of a table with an admission threshold above 1.
#ifndef PSTRAIN_COMMON_PLAN_DYNAMIC_ROW_BYTES_H_
#define PSTRAIN_COMMON_PLAN_DYNAMIC_ROW_BYTES_H_

#include <cstdint>

namespace pstrain {

inline constexpr int64_t kDynamicRowOverheadBytes = 16 + 39;

// A shard's admission filter (ps/store/admission_filter.h): depth rows of width 8-bit counters,
// made only when the table's admission threshold is above 1.
inline constexpr int64_t kDynamicFilterWidth = int64_t{1} << 20;
inline constexpr int kDynamicFilterDepth = 4;
inline constexpr int64_t DynamicFilterBytes(int64_t admission_threshold) {
  return admission_threshold > 1 ? kDynamicFilterWidth * kDynamicFilterDepth : 0;
}

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLAN_DYNAMIC_ROW_BYTES_H_
