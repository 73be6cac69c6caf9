#include "worker/graph/losses.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/tensor/tensor.h"

namespace pstrain {
namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend epsilon

template <typename T>
absl::Status SameShape(const Array<T>& output, const Array<T>& labels) {
  if (output.shape != labels.shape) {
    return absl::InvalidArgumentError(absl::StrCat("labels of shape ", ShapeString(labels.shape),
                                                   " do not match the model's output ", ShapeString(output.shape)));
  }
  return absl::OkStatus();
}

// Categorical cross-entropy of one row against `target` (a distribution), gradient into `d`.
template <typename T>
double CategoricalRow(const T* out, const T* target, int64_t cols, bool from_logits, T scale, T* d) {
  double loss = 0;
  if (from_logits) {
    const T top = *std::max_element(out, out + cols);
    T sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(out[c] - top);
    const T log_sum = std::log(sum) + top;
    T target_sum = 0;
    for (int64_t c = 0; c < cols; ++c) target_sum += target[c];
    for (int64_t c = 0; c < cols; ++c) {
      loss -= static_cast<double>(target[c]) * (out[c] - log_sum);
      d[c] = scale * (std::exp(out[c] - log_sum) * target_sum - target[c]);
    }
    return loss;
  }
  // p = out / sum(out), clipped; loss = -sum target * log p.
  T sum = 0;
  for (int64_t c = 0; c < cols; ++c) sum += out[c];
  T dot = 0;  // sum_j dL/dp_j * p_j, for the normalisation's gradient
  for (int64_t c = 0; c < cols; ++c) {
    const T p = out[c] / sum;
    const bool clipped = p < T(kEpsilon) || p > T(1 - kEpsilon);
    const T pc = std::clamp(p, T(kEpsilon), T(1 - kEpsilon));
    loss -= static_cast<double>(target[c]) * std::log(pc);
    d[c] = clipped ? T(0) : -target[c] / pc;
    dot += d[c] * p;
  }
  for (int64_t c = 0; c < cols; ++c) d[c] = scale * (d[c] - dot) / sum;
  return loss;
}

}  // namespace

absl::StatusOr<LossSpec> ParseLoss(const std::string& name, bool from_logits) {
  LossSpec spec;
  spec.from_logits = from_logits;
  if (name == "sparse_categorical_crossentropy") {
    spec.kind = LossKind::kSparseCategoricalCrossentropy;
  } else if (name == "categorical_crossentropy") {
    spec.kind = LossKind::kCategoricalCrossentropy;
  } else if (name == "binary_crossentropy") {
    spec.kind = LossKind::kBinaryCrossentropy;
  } else if (name == "mean_squared_error" || name == "mse") {
    spec.kind = LossKind::kMeanSquaredError;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "loss '", name, "' is not supported; supported: sparse_categorical_crossentropy, categorical_crossentropy, "
        "binary_crossentropy, mean_squared_error (mse)"));
  }
  return spec;
}

template <typename T>
absl::StatusOr<double> ComputeLoss(const LossSpec& loss, const Array<T>& output, const Array<T>& labels,
                                   Array<T>* doutput) {
  const int64_t rows = output.rows(), cols = output.last();
  if (rows == 0) return absl::InvalidArgumentError("empty batch");
  doutput->Reset(output.shape);
  const T* out = output.data.data();
  T* d = doutput->data.data();
  double total = 0;
  switch (loss.kind) {
    case LossKind::kSparseCategoricalCrossentropy: {
      if (labels.size() != rows) {
        return absl::InvalidArgumentError(absl::StrCat("sparse labels: expected one class id per output row (", rows,
                                                       "), got ", labels.size()));
      }
      std::vector<T> onehot(cols);
      for (int64_t r = 0; r < rows; ++r) {
        const T v = labels.data[r];
        if (!(v >= T(0) && v < T(cols)) || v != std::floor(v)) {
          return absl::InvalidArgumentError(absl::StrCat("label ", static_cast<double>(v),
                                                         " is not a class id in [0, ", cols, ")"));
        }
        std::fill(onehot.begin(), onehot.end(), T(0));
        onehot[static_cast<int64_t>(v)] = T(1);
        total += CategoricalRow(out + r * cols, onehot.data(), cols, loss.from_logits, T(1) / T(rows), d + r * cols);
      }
      break;
    }
    case LossKind::kCategoricalCrossentropy: {
      if (absl::Status s = SameShape(output, labels); !s.ok()) return s;
      for (int64_t r = 0; r < rows; ++r) {
        total += CategoricalRow(out + r * cols, labels.data.data() + r * cols, cols, loss.from_logits, T(1) / T(rows),
                                d + r * cols);
      }
      break;
    }
    case LossKind::kBinaryCrossentropy: {
      if (absl::Status s = SameShape(output, labels); !s.ok()) return s;
      const T scale = T(1) / T(rows * cols);
      for (int64_t i = 0; i < output.size(); ++i) {
        const T z = out[i], t = labels.data[i];
        if (loss.from_logits) {
          total += std::max(z, T(0)) - z * t + std::log1p(std::exp(-std::fabs(z)));
          d[i] = scale * (T(1) / (T(1) + std::exp(-z)) - t);
        } else {
          const bool clipped = z < T(kEpsilon) || z > T(1 - kEpsilon);
          const T p = std::clamp(z, T(kEpsilon), T(1 - kEpsilon));
          total -= t * std::log(p) + (T(1) - t) * std::log(T(1) - p);
          d[i] = clipped ? T(0) : scale * (-t / p + (T(1) - t) / (T(1) - p));
        }
      }
      return total / static_cast<double>(rows * cols);
    }
    case LossKind::kMeanSquaredError: {
      if (absl::Status s = SameShape(output, labels); !s.ok()) return s;
      const T scale = T(2) / T(rows * cols);
      for (int64_t i = 0; i < output.size(); ++i) {
        const T e = out[i] - labels.data[i];
        total += static_cast<double>(e) * e;
        d[i] = scale * e;
      }
      return total / static_cast<double>(rows * cols);
    }
  }
  return total / static_cast<double>(rows);
}

template absl::StatusOr<double> ComputeLoss<float>(const LossSpec&, const Array<float>&, const Array<float>&,
                                                   Array<float>*);
template absl::StatusOr<double> ComputeLoss<double>(const LossSpec&, const Array<double>&, const Array<double>&,
                                                    Array<double>*);

}  // namespace pstrain
