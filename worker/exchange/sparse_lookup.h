// SparseLookup: the rows of each embedding table one step touches. For a batch of a CTR model the
// step takes, per table, the distinct ids of its field (in order of first appearance) and, per
// example and field, the position of the example's id among them: the worker pulls only those
// rows (params[i] = [U_i, dim]), the model gathers by position, and the gradient rows come back
// summed per unique id, in the same order, for the push. A bag field's ids (Batch::bags) join its
// table's unique ids the same way, with a position per id.
// Thread-safety: SparseLookup is a value; an IdDeduper is used by one thread at a time.
#ifndef PSTRAIN_WORKER_EXCHANGE_SPARSE_LOOKUP_H_
#define PSTRAIN_WORKER_EXCHANGE_SPARSE_LOOKUP_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/plan/model_variables.h"
#include "worker/step/batch.h"

namespace pstrain {

struct SparseLookup {
  // Per variable index (ModelVariables() order): the distinct GLOBAL row ids of the table the
  // step touches (IdDeduper: in order of first appearance); empty for dense variables. For a
  // dynamic table (VariableSpec::dynamic) the ids are its keys, any int64.
  std::vector<std::vector<int64_t>> unique_ids;
};

// Builds the lookup of CTR batches for a model's variables, reusing its hash tables across steps
// (an open-addressing table per step, cleared by a generation stamp instead of a memset). Fields
// that share a table (a Keras Embedding on ids of shape [k]) share its unique ids; a table that
// another shares the ids of (two Embedding layers on one input) gets the same list.
class IdDeduper {
 public:
  // `variables` in ModelVariables() order; `field_tables` per field its tables' variable indices,
  // the first defining the rows (FieldTableVariables()).
  IdDeduper(const std::vector<VariableSpec>& variables, std::vector<std::vector<int>> field_tables);
  // One field per sparse variable, in order (the CTR models of job specs' `fields`).
  explicit IdDeduper(const std::vector<VariableSpec>& variables);
  // The model's fields and tables. InvalidArgument as FieldTableVariables().
  static absl::StatusOr<std::unique_ptr<IdDeduper>> ForModel(const ModelSpec& model,
                                                             const std::vector<VariableSpec>& variables);

  int num_fields() const { return static_cast<int>(field_variable_.size()); }

  // Fills lookup->unique_ids (one list per variable) and batch->positions ([B, fields]) from
  // batch->ids ([B, fields]); for a bag field (batch->bags) batch->bag_positions from its ids
  // instead, deduplicated with the other ids of its table (its batch->positions column is 0).
  // InvalidArgument naming the field, the example and the id when an id is outside its table's
  // rows (a dynamic table's ids are keys: any int64), when batch->ids is not B * fields long, or for
  // a bag not of B examples or of no field.
  absl::Status Build(Batch* batch, SparseLookup* lookup);

 private:
  // Position of `id` in `unique` (appending it when new), via the table slots.
  int32_t Insert(int64_t id, std::vector<int64_t>* unique);

  static constexpr int64_t kAnyKey = -1;  // field_rows_ of a dynamic table's field: no range

  std::vector<int> field_variable_;  // per field: its (first) table's variable index
  std::vector<int> tables_;          // the first tables, each once, in order of first field
  std::vector<std::pair<int, int>> aliases_;  // (table, table whose unique ids it takes)
  std::vector<int64_t> field_rows_;  // per field: vocabulary size, or kAnyKey
  std::vector<int> bag_of_field_;    // per field: its bag in the batch being built, or -1
  int64_t max_fields_per_table_ = 1;
  int num_variables_ = 0;
  std::vector<int64_t> slot_id_;  // open addressing: the id in a slot
  std::vector<int32_t> slot_position_;
  std::vector<uint32_t> slot_stamp_;  // slot is live when == stamp_
  uint32_t stamp_ = 0;
  uint64_t mask_ = 0;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_EXCHANGE_SPARSE_LOOKUP_H_
