// The dynamic table files of a checkpoint (CheckpointIndex::dynamic_shards): grouped by table and
// verified without decoding them. A file is "dynamic-<escaped table>-<i>-of-<n>.dtab" in the
// DynamicTableState byte format (ps/store/dynamic_table_state.h), which opens with "PSDYNTB\0" and
// ends with the XXH64 (Checksum64) of every byte before it.
// Thread-safety: pure functions over files.
#ifndef PSTRAIN_COMMON_CHECKPOINT_DYNAMIC_SHARD_FILES_H_
#define PSTRAIN_COMMON_CHECKPOINT_DYNAMIC_SHARD_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/platform/env.h"
#include "proto/ps.pb.h"

namespace pstrain {

// One dynamic table of a checkpoint: its n shard files, shard i at shards[i].
struct SavedDynamicTableFiles {
  std::string table_name;
  int num_shards = 0;
  std::vector<SavedDynamicShard> shards;
  int64_t rows = 0;  // over all shards
};

// The tables of `shards`, by name. DataLoss naming the table and what is wrong when a table's
// entries disagree on the shard count, list one shard twice or lack one (the checkpoint then
// misses a file of it: it is not complete).
absl::StatusOr<std::vector<SavedDynamicTableFiles>> GroupDynamicShards(const std::vector<SavedDynamicShard>& shards);

// GroupDynamicShards, then every file exists in `dir` as a regular file (no symlink), opens with
// the format's magic and matches its trailing checksum (read a piece at a time). DataLoss naming
// the file when it is missing, truncated or corrupt.
absl::Status VerifyDynamicShardFiles(Env* env, const std::string& dir, const std::vector<SavedDynamicShard>& shards);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CHECKPOINT_DYNAMIC_SHARD_FILES_H_
