// Element-wise kernels for one CPU level: bias + activation, ReLU and its gradient, column sums
// (bias gradients), vector sums (gradients of several threads). Whole vectors first, then a
// partial one; the order of additions is fixed, so results repeat exactly.
#include "common/simd.h"
#include "worker/cpu/isa/isa_kernels.h"

namespace pstrain {
namespace PSTRAIN_ISA_NS {

void ColumnSums(const float* d, int64_t rows, int64_t n, int64_t ld, float* out, bool accumulate) {
  for (int64_t j = 0; j < n; j += kLanes) {
    const int w = static_cast<int>(MinI(kLanes, n - j));
    Vec acc = accumulate ? LoadN(out + j, w) : Vec{};
    if (w == kLanes) {
      for (int64_t i = 0; i < rows; ++i) acc += Load(d + i * ld + j);
      Store(out + j, acc);
    } else {
      for (int64_t i = 0; i < rows; ++i) acc += LoadN(d + i * ld + j, w);
      StoreN(out + j, acc, w);
    }
  }
}

void BiasActivation(float* out, int64_t rows, int64_t cols, const float* bias, bool relu) {
  if (bias == nullptr && !relu) return;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = out + r * cols;
    int64_t c = 0;
    for (; c + kLanes <= cols; c += kLanes) {
      Vec v = Load(row + c);
      if (bias != nullptr) v += Load(bias + c);
      Store(row + c, relu ? Max0(v) : v);
    }
    for (; c < cols; ++c) {
      const float v = row[c] + (bias != nullptr ? bias[c] : 0.f);
      row[c] = relu && !(v > 0.f) ? 0.f : v;
    }
  }
}

void Relu(const float* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(out + i, Max0(Load(in + i)));
  for (; i < n; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
}

void ReluBackward(const float* out, const float* dout, float* din, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Vec d = Load(dout + i);
    Store(din + i, Load(out + i) > Vec{} ? d : Vec{});
  }
  for (; i < n; ++i) din[i] = out[i] > 0.f ? dout[i] : 0.f;
}

void Add(float* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(dst + i, Load(dst + i) + Load(src + i));
  for (; i < n; ++i) dst[i] += src[i];
}

}  // namespace PSTRAIN_ISA_NS
}  // namespace pstrain
