// `pstrain inspect --checkpoint=DIR`: lists a checkpoint's variables (assembled from all their
// saved slices in global row order, read a block of rows at a time) with shape, a digest of the
// values' bytes and simple statistics, so two checkpoints can be compared whatever ps count,
// partitioner or strategy (div/mod) wrote them (as TensorFlow's inspect_checkpoint). Dynamic tables
// are listed apart: dim, shard count, rows and bytes per file and in total, the "dynamic" options
// of the job spec, counters, read by decoding each .dtab file (ps/store/dynamic_table_state.h).
// Thread-safety: runs on the calling thread only.
#ifndef PSTRAIN_CHIEF_TOOL_INSPECT_COMMAND_H_
#define PSTRAIN_CHIEF_TOOL_INSPECT_COMMAND_H_

#include <cstdint>

#include "absl/types/span.h"

namespace pstrain {

class Env;

// Entry point for `pstrain inspect ARGS...`. Returns the process exit code.
// `env` (not owned; REQUIRES: non-null) reads and writes the files.
int InspectMain(Env* env, int argc, char** argv);

// FNV-1a 64 of `bytes`, continuing from `h` (kFnv1a64Start for a fresh digest), so a digest of
// data read in pieces equals the digest of the whole.
inline constexpr uint64_t kFnv1a64Start = 1469598103934665603ull;
uint64_t Fnv1a64(absl::Span<const uint8_t> bytes, uint64_t h = kFnv1a64Start);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_TOOL_INSPECT_COMMAND_H_
