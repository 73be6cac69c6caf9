#include "worker/step/ctr_evaluation.h"

#include <algorithm>

#include "common/platform/status_macros.h"
#include "worker/data/shard_iterator.h"

namespace pstrain {

absl::Status EvaluateCtrRange(const Dataset& data, int64_t begin, int64_t end, const CtrEvalSteps& steps,
                              IdDeduper* dedupe, std::vector<Tensor>* params, BatchMetrics* metrics) {
  Batch chunk, batch;
  SparseLookup lookup;
  for (int64_t c = begin; c < end; c += steps.chunk_examples) {
    FillRange(data, c, std::min(end, c + steps.chunk_examples), &chunk);
    RETURN_IF_ERROR(dedupe->Build(&chunk, &lookup));
    RETURN_IF_ERROR(steps.fetch_rows(lookup, params));
    for (int64_t b = 0; b < chunk.size(); b += steps.batch_examples) {
      SliceBatch(chunk, b, std::min(chunk.size(), b + steps.batch_examples), &batch);
      RETURN_IF_ERROR(steps.evaluate(*params, batch, metrics));
    }
  }
  return absl::OkStatus();
}

}  // namespace pstrain
