// Inline evaluation on the chief: the test set is split into shards, each scheduled as an Evaluate
// closure; every shard's sums are counted once (the closure queue drops duplicate executions), so
// each test example is counted exactly once, and the sums are combined here.
// Thread-safety: EvalAccumulator may be fed from any thread.
#ifndef PSTRAIN_CHIEF_EVALUATION_EVALUATION_H_
#define PSTRAIN_CHIEF_EVALUATION_EVALUATION_H_

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "chief/coordinator/closure_queue.h"
#include "common/config/job_spec.h"
#include "nlohmann/json.hpp"
#include "proto/worker.pb.h"

namespace pstrain {

// What a model's evaluation reports: accuracy (classification), loss only (regression, mse), or
// AUC and log loss (binary, CTR models).
enum class MetricsKind { kClassification, kRegression, kBinary };
MetricsKind MetricsKindOf(const ModelSpec& model);

struct EvalResult {
  int64_t step = 0;
  int64_t examples = 0;
  double loss = 0.0;      // mean per-example loss (binary models: the log loss)
  double accuracy = 0.0;  // correct / examples; NaN for regression (mse) and binary models
  double auc = std::nan("");  // binary models: exact AUC over the whole test set; NaN otherwise
};

// "test loss 0.3012, test accuracy 89.12% (10000 examples)" (no accuracy for regression);
// binary models: "test AUC 0.7912, log loss 0.4511 (50000 examples)".
std::string FormatEval(const EvalResult& r);

// {"test_loss", "test_accuracy" | "test_auc", "test_examples"} with NaN as null.
nlohmann::json EvalJson(const EvalResult& r);

// `num_shards` Evaluate closures with ids from `first_id` on (any worker may run each).
std::vector<Closure> MakeEvalClosures(int num_shards, int64_t first_id);

class EvalAccumulator {
 public:
  explicit EvalAccumulator(int num_shards) : num_shards_(num_shards) {}

  // Records shard `shard_index`'s sums; a second result for the same shard is ignored.
  void Add(int shard_index, const EvaluateResponse& response);

  // The combined result. FailedPrecondition naming the missing shards when not all arrived;
  // FailedPrecondition when the test set is empty. Regression leaves the accuracy NaN; binary
  // models get the AUC over every shard's logits (InvalidArgument when a shard's logits and
  // labels do not match its example count).
  absl::StatusOr<EvalResult> Combine(int64_t step, MetricsKind kind = MetricsKind::kClassification) const;

 private:
  const int num_shards_;
  mutable absl::Mutex mu_;
  std::map<int, EvaluateResponse> shards_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_EVALUATION_EVALUATION_H_
