#include "common/metrics/binary_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace pstrain {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Scored {
  double score;
  bool positive;
};

template <typename T>
double Auc(absl::Span<const float> labels, absl::Span<const T> scores) {
  std::vector<Scored> items(scores.size());
  for (size_t i = 0; i < scores.size(); ++i) {
    if (std::isnan(scores[i])) return kNaN;
    items[i] = {static_cast<double>(scores[i]), labels[i] > 0.5f};
  }
  std::sort(items.begin(), items.end(), [](const Scored& a, const Scored& b) { return a.score < b.score; });
  // Walk groups of equal scores upwards. Each positive of a group beats every negative below the
  // group and ties with the group's negatives (one half each); twice the U statistic stays an
  // integer, kept exact in 128 bits whatever the set's size.
  unsigned __int128 twice_u = 0;
  uint64_t negatives_below = 0, positives = 0;
  for (size_t begin = 0; begin < items.size();) {
    size_t end = begin;
    uint64_t pos = 0, neg = 0;
    for (; end < items.size() && items[end].score == items[begin].score; ++end) {
      items[end].positive ? ++pos : ++neg;
    }
    twice_u += static_cast<unsigned __int128>(pos) * (2 * negatives_below + neg);
    negatives_below += neg;
    positives += pos;
    begin = end;
  }
  if (positives == 0 || negatives_below == 0) return kNaN;
  return static_cast<double>(twice_u) / (2.0 * static_cast<double>(positives) * static_cast<double>(negatives_below));
}

template <typename T>
double FromLogits(absl::Span<const float> labels, absl::Span<const T> logits) {
  if (logits.empty()) return kNaN;
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const double z = logits[i], y = labels[i];
    sum += std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::abs(z)));
  }
  return sum / static_cast<double>(logits.size());
}

template <typename T>
double FromProbabilities(absl::Span<const float> labels, absl::Span<const T> probabilities) {
  if (probabilities.empty()) return kNaN;
  double sum = 0.0;
  for (size_t i = 0; i < probabilities.size(); ++i) {
    const double p = std::clamp(static_cast<double>(probabilities[i]), kLogLossEpsilon, 1.0 - kLogLossEpsilon);
    const double y = labels[i];
    sum -= y * std::log(p + kLogLossEpsilon) + (1.0 - y) * std::log(1.0 - p + kLogLossEpsilon);
  }
  return sum / static_cast<double>(probabilities.size());
}

}  // namespace

double ExactAuc(absl::Span<const float> labels, absl::Span<const float> scores) { return Auc(labels, scores); }
double ExactAuc(absl::Span<const float> labels, absl::Span<const double> scores) { return Auc(labels, scores); }

double LogLossFromLogits(absl::Span<const float> labels, absl::Span<const float> logits) {
  return FromLogits(labels, logits);
}
double LogLossFromLogits(absl::Span<const float> labels, absl::Span<const double> logits) {
  return FromLogits(labels, logits);
}

double LogLossFromProbabilities(absl::Span<const float> labels, absl::Span<const float> probabilities) {
  return FromProbabilities(labels, probabilities);
}
double LogLossFromProbabilities(absl::Span<const float> labels, absl::Span<const double> probabilities) {
  return FromProbabilities(labels, probabilities);
}

}  // namespace pstrain
