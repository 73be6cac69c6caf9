// Builds shards from a checkpoint for the rows each now-owned shard covers, whatever partitioning,
// strategy (div/mod) or ps count saved it (values, optimizer slots, version).
// Thread-safety: pure function over files.
#ifndef PSTRAIN_PS_STORE_SHARD_LOADER_H_
#define PSTRAIN_PS_STORE_SHARD_LOADER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/platform/env.h"
#include "proto/common.pb.h"
#include "ps/store/shard.h"

namespace pstrain {

// Loads `specs` from the checkpoint in `dir` (its index.json and shard files). Each shard's version
// is the largest saved version among the slices it draws rows from; optimizer slots absent from
// the checkpoint (another optimizer saved it) start from their initial value. Errors: NotFound
// (no index, variable absent), DataLoss (checksum, truncation, uncovered rows), InvalidArgument
// (bad spec, or a full shape that differs from the saved variable's).
absl::StatusOr<std::vector<std::shared_ptr<Shard>>> LoadShardsFromCheckpoint(Env* env, const std::string& dir,
                                                                             const std::vector<ShardSpecProto>& specs,
                                                                             const ShardOptions& options);

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_SHARD_LOADER_H_
