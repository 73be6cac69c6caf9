// Checkpoint layout shared by the ps (which writes shard files), the chief (which commits
// checkpoints) and single-process tools (which read them with no cluster).
//
// A checkpoint is a directory "<model_dir>/ckpt-<global_step>" holding one data file per saved
// shard (values and optimizer slots, with a checksum) and "index.json": the global step, the job
// spec and every saved shard (variable, full shape, row offset, rows, row stride, file, checksum,
// slots). A shard holds GLOBAL rows row_offset + j * row_stride (row_stride 1 for div shards, the
// shard count for a table's mod shards; absent in older indexes, meaning 1). The
// chief writes it into "ckpt-<step>.tmp-<pid>", fsyncs, then renames it, so a directory named
// "ckpt-<step>" with an index that parses and whose checksums verify is complete.
// Dynamic tables (ps/store/dynamic_table.h) are saved as one file per shard,
// "dynamic-<escaped table>-<i>-of-<n>.dtab", which carries its own checksum; the index lists them in
// "dynamic_shards" (table, shard i of n, file, rows; absent in older indexes: none), and a table
// missing one of its n files makes the checkpoint incomplete.
// Thread-safety: pure functions over files.
#ifndef PSTRAIN_COMMON_CHECKPOINT_CHECKPOINT_INDEX_H_
#define PSTRAIN_COMMON_CHECKPOINT_CHECKPOINT_INDEX_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/platform/env.h"
#include "common/tensor/tensor.h"
#include "proto/ps.pb.h"

namespace pstrain {

struct CheckpointIndex {
  int64_t global_step = 0;
  std::string job_spec_json;
  std::vector<SavedShard> shards;
  std::vector<SavedDynamicShard> dynamic_shards;  // by table, then shard index
};

// Writes "<dir>/index.json" atomically through `env`.
absl::Status WriteCheckpointIndex(Env* env, const std::string& dir, const CheckpointIndex& index);

// Reads and validates "<dir>/index.json" (a regular file, no symlink, at most kMaxJsonFileBytes):
// every shard's file is a plain name inside `dir`, and every size derived from an entry fits
// (SavedShardFileBytes); every dynamic shard's file is a plain name, its index in [0, n), its rows
// >= 0. NotFound when absent; DataLoss when it does not parse or is invalid.
absl::StatusOr<CheckpointIndex> ReadCheckpointIndex(Env* env, const std::string& dir);

// Bytes the data file of `shard` holds: values and each slot, rows x the row's elements x the
// dtype's size, with checked arithmetic. InvalidArgument when that overflows or the dtype is bad.
absl::StatusOr<int64_t> SavedShardFileBytes(const SavedShard& shard);

// Rows [row_offset, row_offset + rows) of variable `variable_name` (all rows when rows < 0),
// assembled from whichever saved slices hold them, verifying each file's checksum. `slot` "" reads
// the values, otherwise an optimizer slot ("m", "v", ...). NotFound when the variable or slot is
// not in the checkpoint; DataLoss on a checksum mismatch or a truncated file.
// `max_bytes` bounds what is read or allocated (0: this host's default memory budget).
absl::StatusOr<Tensor> ReadCheckpointRows(Env* env, const std::string& dir, const CheckpointIndex& index,
                                          const std::string& variable_name, int64_t row_offset, int64_t rows,
                                          const std::string& slot = "", int64_t max_bytes = 0);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CHECKPOINT_CHECKPOINT_INDEX_H_
