// Evaluation of a CTR model over a range of test examples: the range goes in chunks, each chunk's
// ids deduplicated once and its table rows fetched once (one sparse pull per ps on a worker, a
// gather from whole tables in one process), then evaluated in batches. Every example's logit and
// label land in the metrics, in example order, for the exact AUC over the whole test set.
// Thread-safety: one call at a time per IdDeduper and parameter vector.
#ifndef PSTRAIN_WORKER_STEP_CTR_EVALUATION_H_
#define PSTRAIN_WORKER_STEP_CTR_EVALUATION_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/tensor/tensor.h"
#include "worker/data/dataset.h"
#include "worker/exchange/sparse_lookup.h"
#include "worker/step/gradient_computer.h"

namespace pstrain {

struct CtrEvalSteps {
  // Fills params: dense variables whole, table i with the rows of lookup.unique_ids[i].
  std::function<absl::Status(const SparseLookup& lookup, std::vector<Tensor>* params)> fetch_rows;
  // GradientComputer::Evaluate (or a ReplicaSet's).
  std::function<absl::Status(absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* metrics)> evaluate;
  int64_t chunk_examples = 32768;  // ids deduplicated and rows fetched per chunk
  int64_t batch_examples = 2048;   // examples per Evaluate call
};

// Evaluates examples [begin, end) of `data` (a CTR Dataset), adding to `metrics`. `params` is
// the caller's reusable parameter vector. Errors of fetch_rows / evaluate / the dedupe.
absl::Status EvaluateCtrRange(const Dataset& data, int64_t begin, int64_t end, const CtrEvalSteps& steps,
                              IdDeduper* dedupe, std::vector<Tensor>* params, BatchMetrics* metrics);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_STEP_CTR_EVALUATION_H_
