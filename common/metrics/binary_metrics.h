// Metrics of a binary classifier over a whole set of examples: the exact ROC AUC and the mean
// binary cross-entropy (log loss), as CTR work reports them.
//
// Labels are 0 or 1 as floats (any label > 0.5 counts as positive). AUC is the probability that
// a random positive scores above a random negative, ties counting one half: the Mann-Whitney U
// statistic with tied scores given their average rank, computed exactly over the whole set in
// O(n log n) (not TensorFlow's streaming approximation with 200 thresholds).
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_METRICS_BINARY_METRICS_H_
#define PSTRAIN_COMMON_METRICS_BINARY_METRICS_H_

#include "absl/types/span.h"

namespace pstrain {

// The exact AUC of `scores` (logits or probabilities: any monotone score gives the same AUC).
// Returns NaN, meaning "undefined", when the set is empty, holds only one class (no positive or
// no negative: there is no pair to rank, as scikit-learn's roc_auc_score refuses it) or any score
// is NaN (a diverged model). Callers print NaN as "n/a" and write it to JSON as null.
// REQUIRES: labels.size() == scores.size().
double ExactAuc(absl::Span<const float> labels, absl::Span<const float> scores);
double ExactAuc(absl::Span<const float> labels, absl::Span<const double> scores);

// Mean over the set of the binary cross-entropy of logits z, computed without overflow as
// TensorFlow's sigmoid_cross_entropy_with_logits: max(z, 0) - z * y + log(1 + exp(-|z|)).
// Returns NaN for an empty set. REQUIRES: labels.size() == logits.size().
double LogLossFromLogits(absl::Span<const float> labels, absl::Span<const float> logits);
double LogLossFromLogits(absl::Span<const float> labels, absl::Span<const double> logits);

// Mean binary cross-entropy of probabilities p as Keras's backend binary_crossentropy computes it:
// p clipped to [e, 1 - e], then -(y log(p + e) + (1 - y) log(1 - p + e)) with e = 1e-7 (its
// backend epsilon), so p = 0 or 1 gives a large finite loss (-log(2e), about 15.4).
// Returns NaN for an empty set. REQUIRES: labels.size() == probabilities.size().
double LogLossFromProbabilities(absl::Span<const float> labels, absl::Span<const float> probabilities);
double LogLossFromProbabilities(absl::Span<const float> labels, absl::Span<const double> probabilities);

// Keras's backend epsilon, the clip of LogLossFromProbabilities.
inline constexpr double kLogLossEpsilon = 1e-7;

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_METRICS_BINARY_METRICS_H_
