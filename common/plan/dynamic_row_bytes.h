// The most bytes a ps's dynamic table holds per row beside the row's values and optimizer slots:
// its 16-byte row header and its key's hash-map slot (ps/store/dynamic_table.h says how the bound
// is reached; DynamicTable::kMaxOverheadBytesPerRow is checked equal to this there). Plans budget
// it for every row of a dynamic shard's cap (memory_budget.h).
#ifndef PSTRAIN_COMMON_PLAN_DYNAMIC_ROW_BYTES_H_
#define PSTRAIN_COMMON_PLAN_DYNAMIC_ROW_BYTES_H_

#include <cstdint>

namespace pstrain {

inline constexpr int64_t kDynamicRowOverheadBytes = 16 + 39;

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLAN_DYNAMIC_ROW_BYTES_H_
