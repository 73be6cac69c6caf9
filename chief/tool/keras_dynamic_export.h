// A checkpoint's dynamic tables (model.dynamic_tables) as Keras weights. A Keras Embedding holds
// rows by position and a dynamic table holds them by 64-bit key, so each integer input that feeds
// dynamic tables gets a key list: the keys its tables hold, the union over its tables, ascending.
// Each of its tables is written as an Embedding of keys + 1 rows: row 0 is zeros (for ids the
// list lacks; on the cluster such an id gets its small initial row) and row i + 1 is key keys[i]'s
// row: the one the table holds, or its initial row where only another table of the input holds
// the key, so every listed key gives what `pstrain evaluate` gives. A Keras user maps ids to rows
// with `IntegerLookup(vocabulary=keys)` (unknown -> 0, keys[i] -> i + 1) or `np.searchsorted`.
// Thread-safety: plain functions.
#ifndef PSTRAIN_CHIEF_TOOL_KERAS_DYNAMIC_EXPORT_H_
#define PSTRAIN_CHIEF_TOOL_KERAS_DYNAMIC_EXPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/checkpoint/checkpoint_index.h"
#include "common/config/job_spec.h"
#include "common/graph/float_tensor.h"
#include "common/platform/env.h"

namespace pstrain {

// The keys of one integer input of the model, for its dynamic tables.
struct DynamicInputKeys {
  std::string input;          // the model's integer input layer
  std::vector<int64_t> keys;  // ascending, no repeats
};

struct KerasDynamicExport {
  std::vector<DynamicInputKeys> inputs;       // in the model's input order
  std::map<std::string, int64_t> input_dims;  // Embedding layer -> its input's keys + 1
  FloatTensorMap tables;                      // "<layer>/embeddings" -> [keys + 1, dim]
};

// Reads every dynamic table of `job` (a Keras model) from checkpoint `dir` (index: its index).
// ResourceExhausted naming the table when a table's rows could exceed `max_bytes`; the errors of
// SavedDynamicTable::Read (a missing or corrupt file named). An empty result for a job without
// dynamic tables.
absl::StatusOr<KerasDynamicExport> ReadDynamicTablesForKeras(Env* env, const std::string& dir,
                                                             const CheckpointIndex& index, const JobSpec& job,
                                                             int64_t max_bytes);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_TOOL_KERAS_DYNAMIC_EXPORT_H_
