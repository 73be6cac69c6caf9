#include "worker/graph/activation_math.h"

#include <algorithm>
#include <cmath>

namespace pstrain {

template <typename T>
void ActivationForward(ActivationKind kind, const T* x, int64_t count, int64_t cols, T* y) {
  switch (kind) {
    case ActivationKind::kLinear:
      std::copy(x, x + count, y);
      return;
    case ActivationKind::kRelu:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
      return;
    case ActivationKind::kSigmoid:
      for (int64_t i = 0; i < count; ++i) y[i] = T(1) / (T(1) + std::exp(-x[i]));
      return;
    case ActivationKind::kTanh:
      for (int64_t i = 0; i < count; ++i) y[i] = std::tanh(x[i]);
      return;
    case ActivationKind::kGelu:  // Keras's default: the exact form, approximate=False
      for (int64_t i = 0; i < count; ++i) y[i] = T(0.5) * x[i] * (T(1) + std::erf(x[i] / std::sqrt(T(2))));
      return;
    case ActivationKind::kSilu:
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] / (T(1) + std::exp(-x[i]));
      return;
    case ActivationKind::kElu:  // alpha = 1
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] > T(0) ? x[i] : std::expm1(x[i]);
      return;
    case ActivationKind::kSoftmax:
      for (int64_t r = 0; r < count / cols; ++r) {
        const T* xr = x + r * cols;
        T* yr = y + r * cols;
        const T top = *std::max_element(xr, xr + cols);
        T sum = 0;
        for (int64_t c = 0; c < cols; ++c) sum += yr[c] = std::exp(xr[c] - top);
        for (int64_t c = 0; c < cols; ++c) yr[c] /= sum;
      }
      return;
  }
}

template <typename T>
void ActivationBackward(ActivationKind kind, const T* x, const T* y, const T* dy, int64_t count, int64_t cols, T* dx) {
  switch (kind) {
    case ActivationKind::kLinear:
      std::copy(dy, dy + count, dx);
      return;
    case ActivationKind::kRelu:
      for (int64_t i = 0; i < count; ++i) dx[i] = x[i] > T(0) ? dy[i] : T(0);
      return;
    case ActivationKind::kSigmoid:
      for (int64_t i = 0; i < count; ++i) dx[i] = dy[i] * y[i] * (T(1) - y[i]);
      return;
    case ActivationKind::kTanh:
      for (int64_t i = 0; i < count; ++i) dx[i] = dy[i] * (T(1) - y[i] * y[i]);
      return;
    case ActivationKind::kGelu: {
      const T inv_sqrt_2pi = T(0.3989422804014327);
      for (int64_t i = 0; i < count; ++i) {
        const T cdf = T(0.5) * (T(1) + std::erf(x[i] / std::sqrt(T(2))));
        dx[i] = dy[i] * (cdf + x[i] * inv_sqrt_2pi * std::exp(T(-0.5) * x[i] * x[i]));
      }
      return;
    }
    case ActivationKind::kSilu:
      for (int64_t i = 0; i < count; ++i) {
        const T s = T(1) / (T(1) + std::exp(-x[i]));
        dx[i] = dy[i] * (s + x[i] * s * (T(1) - s));
      }
      return;
    case ActivationKind::kElu:
      for (int64_t i = 0; i < count; ++i) dx[i] = x[i] > T(0) ? dy[i] : dy[i] * (y[i] + T(1));
      return;
    case ActivationKind::kSoftmax:
      for (int64_t r = 0; r < count / cols; ++r) {
        const T* yr = y + r * cols;
        const T* dyr = dy + r * cols;
        T dot = 0;
        for (int64_t c = 0; c < cols; ++c) dot += dyr[c] * yr[c];
        T* dxr = dx + r * cols;
        for (int64_t c = 0; c < cols; ++c) dxr[c] = yr[c] * (dyr[c] - dot);
      }
      return;
  }
}

template void ActivationForward<float>(ActivationKind, const float*, int64_t, int64_t, float*);
template void ActivationForward<double>(ActivationKind, const double*, int64_t, int64_t, double*);
template void ActivationBackward<float>(ActivationKind, const float*, const float*, const float*, int64_t, int64_t,
                                        float*);
template void ActivationBackward<double>(ActivationKind, const double*, const double*, const double*, int64_t, int64_t,
                                         double*);

}  // namespace pstrain
