// Checkpoint shard files: writing one saved shard (values then each optimizer slot, raw
// little-endian, checksummed with Checksum64 over the whole file) and reading any rows of a
// variable back from whichever saved slices hold them, so a checkpoint restores under another
// partitioning, strategy (div/mod) or ps count, or into a single process.
//
// A saved slice holds GLOBAL rows row_offset + j * row_stride (div: stride 1; mod: the table's
// shard count), and any target rows are assembled from them. Files are read a piece at a time:
// each is verified once by a streaming checksum, then only the rows asked for are read, so
// restoring a shard needs its own size in memory plus a bounded buffer, whatever the file sizes.
// Thread-safety: WriteShardFile is a pure function; a CheckpointReader is not thread-safe (it
// remembers verified files; use one per thread).
#ifndef PSTRAIN_COMMON_CHECKPOINT_CHECKPOINT_READER_H_
#define PSTRAIN_COMMON_CHECKPOINT_CHECKPOINT_READER_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/checkpoint/checkpoint_index.h"
#include "common/platform/env.h"
#include "common/tensor/tensor.h"
#include "proto/ps.pb.h"

namespace pstrain {

// A file name for `shard_name` ("dense/kernel/part_0" -> "dense%2Fkernel%2Fpart_0.shard"): every
// byte outside [A-Za-z0-9._-] is escaped, so distinct shards never share a file.
std::string ShardFileName(const std::string& shard_name);

// Writes values and slots (named by slot_names, same order) atomically into `dir`, straight from
// their memory (no joined copy), and returns the index entry. REQUIRES: values has
// ShardShape(spec); every slot has the same shape.
absl::StatusOr<SavedShard> WriteShardFile(Env* env, const std::string& dir, const ShardSpecProto& spec,
                                          const Tensor& values, const std::vector<std::string>& slot_names,
                                          const std::vector<Tensor>& slots, int64_t version);

// Rows of a variable to read: GLOBAL rows offset + j * stride for j < rows.
struct RowSelection {
  int64_t offset = 0;
  int64_t rows = 0;
  int64_t stride = 1;
};

class CheckpointReader {
 public:
  // `env` and `index` are not owned and must outlive the reader. No file larger than `max_bytes`
  // is read and no result larger is allocated (0: this host's default memory budget).
  CheckpointReader(Env* env, std::string dir, const CheckpointIndex* index, int64_t max_bytes = 0);

  // Rows [row_offset, row_offset + rows) of a variable (all rows when rows < 0), from the values
  // (slot "") or a slot. Files are named by plain names inside the checkpoint directory and read
  // with Env::FileSize/ReadFileRange (no symlink followed, no FIFO or device read), sized from the
  // index, and each file the rows come from is verified before the result is allocated. NotFound
  // when the variable or slot is absent; DataLoss on a checksum mismatch, a file of the wrong
  // size, a symlink or other non-regular file, or rows no saved slice covers; InvalidArgument when
  // the range falls outside the saved variable; ResourceExhausted when the result would exceed
  // `max_bytes`.
  absl::StatusOr<Tensor> ReadRows(const std::string& variable, int64_t row_offset, int64_t rows,
                                  const std::string& slot);
  // The rows `select` picks, into `out` (float32 or whatever the variable's dtype is, already
  // holding select.rows rows of the variable's row size; its shape is kept). Same codes as ReadRows.
  absl::Status ReadRowsInto(const std::string& variable, const RowSelection& select, const std::string& slot,
                            Tensor* out);
  // The largest saved version among the slices holding any of the selected rows (0 when none).
  int64_t VersionOf(const std::string& variable, const RowSelection& select) const;
  // True when every saved slice of `variable` has `slot`.
  bool HasSlot(const std::string& variable, const std::string& slot) const;
  // Verifies every file the index lists (size and checksum), and that the slices of each variable
  // hold each of its rows exactly once and agree on shape, dtype and slots; every dynamic table
  // has all its shard files, each intact (VerifyDynamicShardFiles). DataLoss naming the first
  // problem. Reads each file once, in pieces.
  absl::Status VerifyAll();

 private:
  // The saved slices of `variable`; NotFound when it has none.
  absl::StatusOr<std::vector<const SavedShard*>> SlicesOf(const std::string& variable) const;
  // Size and streaming checksum of `shard`'s file, once per file.
  absl::Status VerifyFile(const SavedShard& shard);
  // Verifies every file holding rows of `select`, and that those files can hold as many rows as
  // asked for (DataLoss otherwise): checked before a result is allocated for them.
  absl::Status VerifyFilesFor(const std::vector<const SavedShard*>& slices, const RowSelection& select);
  // `shard`'s file inside the checkpoint directory; DataLoss for a name that would leave it.
  absl::StatusOr<std::string> FilePath(const SavedShard& shard) const;
  // Copies the rows of `select` that slice `s` holds into `out`, marking them in `covered`.
  absl::Status CopyFromSlice(const SavedShard& s, int slot_index, const RowSelection& select, size_t row_bytes,
                             char* out, std::vector<bool>* covered, int64_t* copied);

  Env* const env_;
  const std::string dir_;
  const CheckpointIndex* const index_;
  const int64_t max_bytes_;
  std::map<std::string, const SavedShard*> verified_;  // file name whose checksum matched -> its entry
};

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CHECKPOINT_CHECKPOINT_READER_H_
