#include "worker/exchange/table_layout.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/tensor/tensor.h"

namespace pstrain {
namespace {

absl::Status BadShard(const std::string& table, const ShardSpecProto& s, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("the variable plan does not fit table ", table, ": shard ",
                                                 s.shard_name(), " (row_offset ", s.row_offset(), ", rows ", s.rows(),
                                                 ", row_stride ", s.row_stride(), ") ", why));
}

}  // namespace

absl::StatusOr<TableLayout> TableLayout::FromPlan(const VariablePlanProto::Variable& variable) {
  TableLayout t;
  t.name_ = variable.name();
  if (variable.shape_size() != 2 || variable.shape(0) < 1 || variable.shape(1) < 1 || variable.shards_size() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("table ", t.name_, " must be 2-D [rows, dim] with shards, not ",
                                                   ShapeString(variable.shape()), " in ", variable.shards_size(),
                                                   " shards"));
  }
  t.rows_ = variable.shape(0);
  t.dim_ = variable.shape(1);
  const int64_t n = variable.shards_size();
  t.mod_ = n > 1 && variable.shards(0).row_stride() > 1;
  int64_t next = 0;  // div: the first row the next shard must start at
  for (int64_t i = 0; i < n; ++i) {
    const ShardSpecProto& s = variable.shards(static_cast<int>(i));
    if (t.mod_) {
      const int64_t want = (t.rows_ - i + n - 1) / n;
      if (s.row_offset() != i || s.row_stride() != n || s.rows() != want) {
        return BadShard(t.name_, s, absl::StrCat("is not residue ", i, " of ", n, " (", want, " rows)"));
      }
      continue;
    }
    if (s.row_offset() != next || s.rows() <= 0 || s.row_stride() > 1 || next + s.rows() > t.rows_) {
      return BadShard(t.name_, s, absl::StrCat("does not continue the row ranges at row ", next));
    }
    t.offsets_.push_back(next);
    next += s.rows();
  }
  if (t.mod_) {
    t.offsets_.assign(static_cast<size_t>(n), 0);
  } else if (next != t.rows_) {
    return absl::InvalidArgumentError(
        absl::StrCat("the shards of table ", t.name_, " cover ", next, " of its ", t.rows_, " rows"));
  }
  return t;
}

int TableLayout::ShardOf(int64_t id) const {
  if (mod_) return static_cast<int>(id % num_shards());
  return static_cast<int>(std::upper_bound(offsets_.begin(), offsets_.end(), id) - offsets_.begin()) - 1;
}

absl::Status TableLayout::Group(absl::Span<const int64_t> ids, std::vector<std::vector<int64_t>>* positions) const {
  positions->resize(static_cast<size_t>(num_shards()));
  for (auto& p : *positions) p.clear();
  for (size_t k = 0; k < ids.size(); ++k) {
    const int64_t id = ids[k];
    if (id < 0 || id >= rows_) {
      return absl::InvalidArgumentError(
          absl::StrCat("table ", name_, " has rows 0..", rows_ - 1, "; row id ", id, " is outside it"));
    }
    (*positions)[static_cast<size_t>(ShardOf(id))].push_back(static_cast<int64_t>(k));
  }
  return absl::OkStatus();
}

}  // namespace pstrain
