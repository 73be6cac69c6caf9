// The training AUC of CTR jobs: each closure (k steps of one worker's batches; in one process,
// k steps of the global batch) yields an exact AUC over its own examples, and a report shows
// their mean weighted by examples. Undefined AUCs (a closure with one class only) are skipped.
// Thread-safety: a value; guard shared instances externally.
#ifndef PSTRAIN_COMMON_METRICS_AUC_AVERAGE_H_
#define PSTRAIN_COMMON_METRICS_AUC_AVERAGE_H_

#include <cmath>
#include <cstdint>
#include <limits>

namespace pstrain {

struct AucAverage {
  double weighted_sum = 0.0;
  int64_t examples = 0;

  // Adds an AUC over `n` examples; NaN (undefined) is ignored.
  void Add(double auc, int64_t n) {
    if (!std::isfinite(auc) || n <= 0) return;
    weighted_sum += auc * static_cast<double>(n);
    examples += n;
  }
  // NaN when nothing was added.
  double Mean() const {
    return examples > 0 ? weighted_sum / static_cast<double>(examples) : std::numeric_limits<double>::quiet_NaN();
  }
};

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_METRICS_AUC_AVERAGE_H_
