// What a model dir holds from earlier runs, and starting over without mixing two runs: the
// earlier run's checkpoints, metrics and summary are moved together into a directory of their own
// ("previous-run-<UTC time>"), never deleted and never left beside the new run's.
// Thread-safety: functions over the filesystem; one chief per model dir.
#ifndef PSTRAIN_CHIEF_CHECKPOINT_MODEL_DIR_H_
#define PSTRAIN_CHIEF_CHECKPOINT_MODEL_DIR_H_

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

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_CHECKPOINT_MODEL_DIR_H_
