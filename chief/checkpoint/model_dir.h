// What a model dir holds from earlier runs, and starting over without mixing two runs: the
// earlier run's checkpoints, metrics and summary are moved together into a directory of their own
// ("previous-run-<UTC time>"), never deleted and never left beside the new run's.
// Thread-safety: functions over the filesystem; one chief per model dir.
#ifndef PSTRAIN_CHIEF_CHECKPOINT_MODEL_DIR_H_
#define PSTRAIN_CHIEF_CHECKPOINT_MODEL_DIR_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/platform/env.h"

namespace pstrain {

// Names of the entries of `model_dir` an earlier run wrote: "ckpt-*" (complete, interrupted or
// set aside), metrics.jsonl, summary.json, and the TensorBoard runs train/ and eval/. Empty when
// the directory does not exist.
absl::StatusOr<std::vector<std::string>> EarlierRunEntries(Env* env, const std::string& model_dir);

// Moves EarlierRunEntries into "<model_dir>/previous-run-<UTC time>" (a fresh name) and returns
// that directory, or "" when there was nothing to move. Internal on filesystem errors, with the
// entries moved so far named.
absl::StatusOr<std::string> MoveEarlierRunAside(Env* env, const std::string& model_dir);

// The lock that makes one process at a time the owner of `model_dir` (created when missing): the
// file "<model_dir>/<lock_name>" ("owner.lock" for the chief, "evaluator.lock" for the evaluator),
// held until the returned lock is destroyed or the process ends, and naming `who` ("pstrain-chief,
// task chief:0") with this process's pid, host and start time. FailedPrecondition naming the
// owner and the way out when another process holds it; Env::LockFile's other errors.
absl::StatusOr<std::unique_ptr<FileLock>> LockModelDir(Env* env, const std::string& model_dir,
                                                       const std::string& lock_name, const std::string& who);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_CHECKPOINT_MODEL_DIR_H_
