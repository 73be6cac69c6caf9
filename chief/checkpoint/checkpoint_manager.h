// CheckpointManager: commits checkpoints of the whole job atomically and finds the one to resume.
// Save(step): creates "<model_dir>/ckpt-<step>.tmp-<pid>", asks every ps to Save its shards into
// it, writes index.json (job spec, global step, every saved shard and dynamic table file), fsyncs
// and renames the directory to "ckpt-<step>", then keeps only the newest `keep` checkpoints (each
// removed whole, its dynamic table files with it). A crash at any point
// leaves at most a ".tmp-" directory, which never counts as a checkpoint.
// FindLatest(): the newest "ckpt-<step>" whose index parses and whose files verify; incomplete or
// corrupt ones are skipped with a warning naming them and the reason. A model dir whose
// checkpoints all fail is an error naming each, never "no checkpoint" (which would start over).
// Thread-safety: one Save/Restore at a time (the coordinator's thread); FindLatest is a pure read.
#ifndef PSTRAIN_CHIEF_CHECKPOINT_CHECKPOINT_MANAGER_H_
#define PSTRAIN_CHIEF_CHECKPOINT_CHECKPOINT_MANAGER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/checkpoint/checkpoint_index.h"
#include "common/graph/float_tensor.h"
#include "common/platform/env.h"
#include "proto/common.pb.h"
#include "ps/client/ps_client.h"

namespace pstrain {

struct FoundCheckpoint {
  std::string dir;
  CheckpointIndex index;
};

class CheckpointManager {
 public:
  // `env` and the clients are not owned. `keep` >= 1.
  CheckpointManager(Env* env, std::string model_dir, int keep, std::vector<PsClient*> ps);

  // Saves the job's state at `global_step`; returns the final directory. `extra_files` (name ->
  // contents) are written into it too, before it is committed (e.g. the data positions). Errors
  // from a ps or the filesystem are returned with the ps or path named, DataLoss naming the table
  // when no ps saved one of a dynamic table's shards; the temporary directory is removed then.
  absl::StatusOr<std::string> Save(int64_t global_step, const std::string& job_spec_json,
                                   const std::map<std::string, std::string>& extra_files = {});
  // A checkpoint the chief writes itself, with no ps: each variable of `plan` whole (one
  // unpartitioned slice, version 0, no optimizer slots: the ps start those as a fresh shard does)
  // from `values` (by variable name), and `extra_files`, committed as Save does. A ps restores it under any plan, so
  // starting values given at start (--init_from) reach the ps partitioned as the plan says.
  // InvalidArgument naming the variable when `values` lacks one or holds it in another shape or
  // size, or when `plan` holds a dynamic table that `dynamic_shards` does not list; filesystem
  // errors with the path. `dynamic_shards` go into the index as they are: dynamic tables saved as
  // files of `extra_files` by the caller (`pstrain train --model_dir`, which holds them in process;
  // --init_from's starting rows).
  absl::StatusOr<std::string> SaveValues(int64_t global_step, const std::string& job_spec_json,
                                         const VariablePlanProto& plan, const FloatTensorMap& values,
                                         const std::map<std::string, std::string>& extra_files = {},
                                         const std::vector<SavedDynamicShard>& dynamic_shards = {});

  // ps_replicas: ps task `ps` holds no primary shard (lost, its backups promoted; or back as a
  // backup only), so Save skips it (`skip`) or asks it again (!`skip`).
  void SkipPs(int ps, bool skip);

  // The newest complete checkpoint, or nullopt when the model dir holds no "ckpt-<step>" at all.
  // FailedPrecondition naming every checkpoint and why it failed when there are some but none can
  // be used (nothing is changed then). Each skipped directory adds a line to `warnings` (not
  // owned, may be null). With `remove_incomplete` (the chief at start-up, when no save can be
  // running) ".tmp-" directories left by crashes are removed, and unusable checkpoints newer than
  // the one returned are renamed "<name>.unusable" (kept, but never pruned, replaced or restored);
  // readers such as the evaluator pass false and change nothing.
  absl::StatusOr<std::optional<FoundCheckpoint>> FindLatest(std::vector<std::string>* warnings,
                                                            bool remove_incomplete = true);

  // Verifies every file's size and checksum (read in pieces, never whole), that the slices of
  // each variable hold each row once and that each dynamic table has all its files, intact
  // (CheckpointReader::VerifyAll). DataLoss naming the file or
  // variable when something is missing or corrupt.
  static absl::Status Verify(Env* env, const std::string& dir, const CheckpointIndex& index);

  // Step of a directory name "ckpt-<step>", or -1 for any other name (including ".tmp-" ones).
  static int64_t StepOfName(const std::string& name);

 private:
  // Creates the temporary directory, lets `fill` write into it, commits it as ckpt-<step>, prunes.
  absl::StatusOr<std::string> Commit(int64_t global_step, const std::function<absl::Status(const std::string&)>& fill);
  absl::Status SaveInto(const std::string& tmp, int64_t global_step, const std::string& job_spec_json,
                        const std::map<std::string, std::string>& extra_files);
  absl::Status Prune();

  Env* const env_;
  const std::string model_dir_;
  const int keep_;
  const std::vector<PsClient*> ps_;
  std::vector<bool> skip_;  // by ps index
};

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_CHECKPOINT_CHECKPOINT_MANAGER_H_
