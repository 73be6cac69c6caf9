#include "chief/evaluation/saved_dynamic_table.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/plan/variable_planner.h"
#include "common/platform/status_macros.h"
#include "ps/store/ps_server.h"

namespace pstrain {

absl::StatusOr<SavedDynamicTable> SavedDynamicTable::Read(Env* env, const std::string& dir, const VariableSpec& var,
                                                          uint64_t seed) {
  if (!var.dynamic.has_value() || var.shape.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("variable ", var.name, " is not a dynamic [rows, dim] table"));
  }
  const int64_t dim = var.shape[1];
  ASSIGN_OR_RETURN(std::vector<DynamicTableState> saved, ReadDynamicTableFiles(env, dir, var.name));
  // One shard holding every key, as a ps of one would restore it.
  absl::StatusOr<std::vector<DynamicTableState>> merged = ReshardDynamicTableStates(saved, 1);
  if (!merged.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamic table ", var.name, " in ", dir, ": ", merged.status().message()));
  }
  DynamicTableState state = std::move((*merged)[0]);
  if (state.dim != dim) {
    return absl::InvalidArgumentError(absl::StrCat("dynamic table ", var.name, " in ", dir, " has rows of ", state.dim,
                                                   " floats but the model's embedding_dim is ", dim));
  }
  ASSIGN_OR_RETURN(DynamicRowInitializer initializer,
                   DynamicRowInitializer::Create(InitializerToProto(var.initializer), seed, var.name, dim));
  return SavedDynamicTable(std::move(state), std::move(initializer));
}

void SavedDynamicTable::Lookup(absl::Span<const int64_t> keys, Tensor* rows) const {
  const int64_t dim = state_.dim;
  const std::vector<int64_t> shape = {static_cast<int64_t>(keys.size()), dim};
  if (rows->shape() != shape) *rows = Tensor(DType::kFloat32, shape);
  absl::Span<float> out = rows->flat();
  for (size_t i = 0; i < keys.size(); ++i) {
    absl::Span<float> row = out.subspan(i * dim, dim);
    auto it = std::lower_bound(state_.keys.begin(), state_.keys.end(), keys[i]);
    if (it == state_.keys.end() || *it != keys[i]) {
      initializer_.Fill(keys[i], row);
      continue;
    }
    // A saved row is its values, then each optimizer slot.
    const float* values = state_.rows.data() + (it - state_.keys.begin()) * state_.FloatsPerRow();
    std::copy(values, values + dim, row.begin());
  }
}

}  // namespace pstrain
