// TableLayout: which shard of an embedding table owns each row, from the variable plan: "div"
// shards hold contiguous ranges (binary search), "mod" shards hold the rows of one residue
// (id % shards). A worker uses it to send each of a step's ids to the one ps shard that holds it.
// Thread-safety: immutable after FromPlan; safe to share.
#ifndef PSTRAIN_WORKER_EXCHANGE_TABLE_LAYOUT_H_
#define PSTRAIN_WORKER_EXCHANGE_TABLE_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/common.pb.h"

namespace pstrain {

class TableLayout {
 public:
  // Checks that `variable` is a 2-D table whose shards tile its rows as div ranges (in order,
  // stride 1) or as mod residues (shard i: row_offset i, row_stride n, ceil((rows - i) / n) rows).
  // InvalidArgument naming the table and the offending shard otherwise.
  static absl::StatusOr<TableLayout> FromPlan(const VariablePlanProto::Variable& variable);

  const std::string& name() const { return name_; }
  int64_t rows() const { return rows_; }
  int64_t dim() const { return dim_; }
  int num_shards() const { return static_cast<int>(offsets_.size()); }
  bool mod() const { return mod_; }

  // The shard that holds row `id`. REQUIRES: 0 <= id < rows().
  int ShardOf(int64_t id) const;
  // positions->at(s) = the positions k in `ids` whose row lives in shard s, in increasing k.
  // InvalidArgument naming the table and the first id outside [0, rows()).
  absl::Status Group(absl::Span<const int64_t> ids, std::vector<std::vector<int64_t>>* positions) const;

 private:
  std::string name_;
  int64_t rows_ = 0, dim_ = 0;
  bool mod_ = false;
  std::vector<int64_t> offsets_;  // div: first row of each shard, ascending
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_EXCHANGE_TABLE_LAYOUT_H_
