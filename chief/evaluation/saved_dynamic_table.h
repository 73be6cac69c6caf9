// A dynamic table (VariableSpec::dynamic) as a checkpoint holds it, for evaluating in one process:
// the rows of all its saved shards (any shard count, merged as onto one shard), and for a key the
// checkpoint lacks the initial row a ps would give it (DynamicRowInitializer from the job seed,
// the table's name and initializer), so a lookup here equals a pull from the cluster that saved it.
// Thread-safety: immutable after Read; Lookup is safe from any thread.
#ifndef PSTRAIN_CHIEF_EVALUATION_SAVED_DYNAMIC_TABLE_H_
#define PSTRAIN_CHIEF_EVALUATION_SAVED_DYNAMIC_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/plan/model_variables.h"
#include "common/platform/env.h"
#include "common/tensor/tensor.h"
#include "ps/store/dynamic_row_initializer.h"
#include "ps/store/dynamic_table_state.h"

namespace pstrain {

class SavedDynamicTable {
 public:
  // Reads every file of table `var` in checkpoint `dir` (ReadDynamicTableFiles). NotFound /
  // DataLoss naming the file; InvalidArgument when the saved dim differs from the model's or the
  // variable is not a dynamic [rows, dim] table.
  static absl::StatusOr<SavedDynamicTable> Read(Env* env, const std::string& dir, const VariableSpec& var,
                                                uint64_t seed);

  // rows = [keys.size(), dim] (reallocated only when its shape changes): each key's saved values,
  // or its initial row when the checkpoint does not hold it.
  void Lookup(absl::Span<const int64_t> keys, Tensor* rows) const;

  int64_t rows() const { return static_cast<int64_t>(state_.keys.size()); }
  int64_t dim() const { return state_.dim; }
  const std::vector<int64_t>& keys() const { return state_.keys; }  // every saved key, ascending

 private:
  SavedDynamicTable(DynamicTableState state, DynamicRowInitializer initializer)
      : state_(std::move(state)), initializer_(std::move(initializer)) {}

  DynamicTableState state_;  // every shard's rows, keys ascending
  DynamicRowInitializer initializer_;
};

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_EVALUATION_SAVED_DYNAMIC_TABLE_H_
