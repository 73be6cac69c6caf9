// libFuzzer target: a checkpoint as `pstrain inspect`, `evaluate` and a restoring ps read it: the
// index (index.json) and one shard file. The input is the index, then "\n--shard--\n", then the
// bytes of the file the index's shards name "w.shard" (every shard file name is redirected there).
// Beyond "no crash, no sanitizer report": rows read back have the size asked for.
#include <cstddef>
#include <cstdint>

#include "common/checkpoint/checkpoint_index.h"
#include "common/checkpoint/checkpoint_reader.h"
#include "common/platform/env.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pstrain;
  auto [index_json, shard] =
      fuzz::SplitInput(absl::string_view(reinterpret_cast<const char*>(data), size), "\n--shard--\n");
  fuzz::WriteScratch("index.json", index_json);
  fuzz::WriteScratch("w.shard", shard);
  Env* env = Env::Default();
  absl::StatusOr<CheckpointIndex> index = ReadCheckpointIndex(env, fuzz::ScratchDir());
  if (!index.ok()) return 0;
  for (SavedShard& s : index->shards) s.set_file("w.shard");
  CheckpointReader reader(env, fuzz::ScratchDir(), &*index);
  (void)reader.VerifyAll();
  for (const SavedShard& s : index->shards) {
    std::vector<std::string> slots = {""};  // the values, then each optimizer slot
    slots.insert(slots.end(), s.slot_names().begin(), s.slot_names().end());
    for (const std::string& slot : slots) {
      absl::StatusOr<Tensor> rows =
          reader.ReadRows(s.variable_name(), s.row_offset(), std::min<int64_t>(s.rows(), 64), slot);
      if (rows.ok() && s.full_shape_size() > 0) {
        fuzz::Check(rows->shape().empty() || rows->shape()[0] == std::min<int64_t>(s.rows(), 64));
      }
    }
  }
  return 0;
}
