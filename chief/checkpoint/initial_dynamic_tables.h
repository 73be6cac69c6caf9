// The dynamic tables `--init_from` starts from Keras rows (common/graph/initial_weights.h), as the
// checkpoint files a ps restores: each table one file, DynamicShardFileName(table, 0, 1), holding
// its keys and rows with the optimizer's initial slots (ps/store/dynamic_table_state.h); a ps task
// restoring it keeps the keys it owns, whatever the ps count. `pstrain train` restores the same
// bytes into its own tables, so one process and a cluster start alike.
// Thread-safety: pure functions.
#ifndef PSTRAIN_CHIEF_CHECKPOINT_INITIAL_DYNAMIC_TABLES_H_
#define PSTRAIN_CHIEF_CHECKPOINT_INITIAL_DYNAMIC_TABLES_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/checkpoint/checkpoint_index.h"
#include "common/config/job_spec.h"
#include "common/graph/initial_weights.h"

namespace pstrain {

struct InitialDynamicFiles {
  std::map<std::string, std::string> files;  // file name -> bytes, for a checkpoint dir
  std::vector<SavedDynamicShard> shards;     // the index entries listing them

  // The bytes of table `variable`'s file, or null when it has none.
  const std::string* BytesOf(const std::string& variable) const;
};

// The files of every dynamic table of `job` from `weights` (its dynamic_keys and values).
// InvalidArgument naming the table when a shard of `num_ps` would hold more keys than its cap
// (DynamicShardCap: the keys are placed by hash, so a table near its max_rows may not fit), or
// when the optimizer cannot be made (adam: refused for dynamic tables). REQUIRES: num_ps >= 1.
absl::StatusOr<InitialDynamicFiles> InitialDynamicTableFiles(const JobSpec& job, const InitialWeights& weights,
                                                             int num_ps);

// The index entry of a table's only file (shard 0 of 1) holding `rows` rows.
SavedDynamicShard OneFileDynamicShard(const std::string& table, int64_t rows);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_CHECKPOINT_INITIAL_DYNAMIC_TABLES_H_
