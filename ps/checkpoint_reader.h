// Checkpoint shard files: writing one saved shard (values then each optimizer slot, raw
// little-endian, checksummed with Checksum64 over the whole file) and reading any row range of a
// variable back from whichever saved slices hold it, so a checkpoint restores under another
// partitioning or ps count, or into a single process.
// Thread-safety: WriteShardFile is a pure function; a CheckpointReader is not thread-safe (it
// caches verified files; use one per thread).
#ifndef PSTRAIN_PS_CHECKPOINT_READER_H_
#define PSTRAIN_PS_CHECKPOINT_READER_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/env.h"
#include "common/tensor.h"
#include "proto/ps.pb.h"
#include "ps/checkpoint_index.h"

namespace pstrain {

// A file name for `shard_name` ("dense/kernel/part_0" -> "dense%2Fkernel%2Fpart_0.shard"): every
// byte outside [A-Za-z0-9._-] is escaped, so distinct shards never share a file.
std::string ShardFileName(const std::string& shard_name);

// Writes values and slots (named by slot_names, same order) atomically into `dir` and returns
// the index entry. REQUIRES: values has ShardShape(spec); every slot has the same shape.
absl::StatusOr<SavedShard> WriteShardFile(Env* env, const std::string& dir, const ShardSpecProto& spec,
                                          const Tensor& values, const std::vector<std::string>& slot_names,
                                          const std::vector<Tensor>& slots, int64_t version);

class CheckpointReader {
 public:
  // `env` and `index` are not owned and must outlive the reader. No file larger than `max_bytes`
  // is read and no result larger is allocated (0: this host's default memory budget).
  CheckpointReader(Env* env, std::string dir, const CheckpointIndex* index, int64_t max_bytes = 0);

  // Rows [row_offset, row_offset + rows) of a variable (all rows when rows < 0), from the values
  // (slot "") or a slot. Files are read with Env::ReadRegularFile (no symlink followed), sized
  // from the index before reading and verified before the result is allocated. NotFound when the
  // variable or slot is absent; DataLoss on a checksum mismatch, a file of the wrong size, a
  // symlink or other non-regular file, or rows no saved slice covers; InvalidArgument when the
  // range falls outside the saved variable; ResourceExhausted beyond `max_bytes`.
  absl::StatusOr<Tensor> ReadRows(const std::string& variable, int64_t row_offset, int64_t rows,
                                  const std::string& slot);
  // The largest saved version among the slices overlapping the rows (0 when none).
  int64_t VersionOf(const std::string& variable, int64_t row_offset, int64_t rows) const;
  // True when every saved slice of `variable` has `slot`.
  bool HasSlot(const std::string& variable, const std::string& slot) const;

 private:
  absl::StatusOr<const std::string*> VerifiedFile(const SavedShard& shard);

  Env* const env_;
  const std::string dir_;
  const CheckpointIndex* const index_;
  const int64_t max_bytes_;
  std::map<std::string, std::string> files_;  // file name -> verified contents
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_CHECKPOINT_READER_H_
