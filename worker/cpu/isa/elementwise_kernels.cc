// Element-wise kernels for one CPU level: bias + activation, ReLU and its gradient, column sums
// (bias gradients), vector sums (gradients of several threads). Whole vectors first, then a
// partial one; the order of additions is fixed, so results repeat exactly.
#include "common/platform/simd.h"
#include "worker/cpu/isa/isa_kernels.h"

namespace pstrain {
namespace PSTRAIN_ISA_NS {

namespace {

// Sums of NV column vectors (the last one `tail` wide) over the rows: four rows in flight, so the
// additions of one column do not wait on each other.
template <int NV>
void SumColumns(const float* d, int64_t rows, int64_t ld, int tail, float* out, bool accumulate) {
  Vec acc[4][NV] = {};
  auto load = [&](const float* p, int v) { return v + 1 < NV || tail == kLanes ? Load(p) : LoadN(p, tail); };
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    for (int phase = 0; phase < 4; ++phase) {
      for (int v = 0; v < NV; ++v) acc[phase][v] += load(d + (i + phase) * ld + v * kLanes, v);
    }
  }
  for (; i < rows; ++i) {
    for (int v = 0; v < NV; ++v) acc[0][v] += load(d + i * ld + v * kLanes, v);
  }
  for (int v = 0; v < NV; ++v) {
    const int w = v + 1 < NV ? kLanes : tail;
    Vec total = (acc[0][v] + acc[1][v]) + (acc[2][v] + acc[3][v]);
    if (accumulate) total += LoadN(out + v * kLanes, w);
    StoreN(out + v * kLanes, total, w);
  }
}

}  // namespace

void ColumnSums(const float* d, int64_t rows, int64_t n, int64_t ld, float* out, bool accumulate) {
  for (int64_t j = 0; j < n; j += 4 * kLanes) {
    const int64_t w = MinI(4 * kLanes, n - j);
    const int nv = static_cast<int>((w + kLanes - 1) / kLanes);
    const int tail = static_cast<int>(w - (nv - 1) * kLanes);
    switch (nv) {
      case 1:
        SumColumns<1>(d + j, rows, ld, tail, out + j, accumulate);
        break;
      case 2:
        SumColumns<2>(d + j, rows, ld, tail, out + j, accumulate);
        break;
      case 3:
        SumColumns<3>(d + j, rows, ld, tail, out + j, accumulate);
        break;
      default:
        SumColumns<4>(d + j, rows, ld, tail, out + j, accumulate);
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
