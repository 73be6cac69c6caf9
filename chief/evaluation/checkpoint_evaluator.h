// Evaluating a checkpoint in one process with no cluster ("restore without strategy"): the full
// variables are assembled from whatever slices the checkpoint holds (any ps count or partitioner),
// dynamic tables from their .dtab files (saved_dynamic_table.h),
// the model comes from the job spec stored in the checkpoint, and the test set is evaluated on
// the CPU reference implementation in the same shards and order the workers use.
// Thread-safety: pure functions over files.
#ifndef PSTRAIN_CHIEF_EVALUATION_CHECKPOINT_EVALUATOR_H_
#define PSTRAIN_CHIEF_EVALUATION_CHECKPOINT_EVALUATOR_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "chief/evaluation/evaluation.h"
#include "common/checkpoint/checkpoint_index.h"
#include "common/config/job_spec.h"
#include "common/platform/env.h"
#include "common/tensor/tensor.h"

namespace pstrain {

struct CheckpointEvalOptions {
  // The test data to read: the user's (a job spec or flags). Without it, the data named by the job
  // spec stored in the checkpoint, which callers show the user (DescribeData) before reading.
  std::optional<DataSpec> data;
  std::string data_dir;   // overrides data.dir when non-empty
  int threads = 1;
  int64_t batch_size = 500;
  int64_t max_bytes = 0;  // most bytes a checkpoint variable may take (0: this host's default budget)
};

// "fashion_mnist in DIR", "csv file FILE", ... for telling the user what will be read.
std::string DescribeData(const DataSpec& data, const std::string& data_dir);

// The model's variables in ModelVariables() order, read from `dir` (checksums verified); a
// dynamic table (VariableSpec::dynamic), which has no [rows, dim] tensor, is an empty Tensor
// (SavedDynamicTable reads it).
// NotFound / DataLoss naming the variable or file; InvalidArgument when a shape differs.
absl::StatusOr<std::vector<Tensor>> LoadModelVariables(Env* env, const std::string& dir, const CheckpointIndex& index,
                                                       const ModelSpec& model, int64_t max_bytes = 0);

// The job spec stored in the checkpoint's index. InvalidArgument when it does not parse.
absl::StatusOr<JobSpec> JobSpecOfCheckpoint(const CheckpointIndex& index);

// `path` as a checkpoint directory: itself when it holds an index.json, else (a model dir) its
// newest complete checkpoint; newer checkpoints skipped as incomplete are described in `warnings`.
// NotFound when it is neither.
absl::StatusOr<std::string> ResolveCheckpoint(Env* env, const std::string& path, std::vector<std::string>* warnings);

// Test loss and accuracy of the checkpoint in `dir` (step from its index).
absl::StatusOr<EvalResult> EvaluateCheckpoint(Env* env, const std::string& dir, const CheckpointEvalOptions& options);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_EVALUATION_CHECKPOINT_EVALUATOR_H_
