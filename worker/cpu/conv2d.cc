#include "worker/cpu/conv2d.h"

#include <algorithm>
#include <cstring>

#include "worker/cpu/eigen_maps.h"
#include "worker/cpu/gemm.h"

namespace pstrain {

// Each (output pixel, kernel row) maps to one contiguous run of kernel * in_channels input floats
// (clipped at the left/right border), so im2col is a few memcpy calls per output pixel.
void Conv2D::Im2Col(const float* in, int64_t batch) {
  const int64_t oh = g_.out_height(), ow = g_.out_width(), c = g_.in_channels, k = g_.kernel;
  const int64_t pad = g_.pad(), patch = g_.patch();
  col_.resize(static_cast<size_t>(batch * oh * ow * patch));
  float* dst = col_.data();
  for (int64_t n = 0; n < batch; ++n) {
    const float* image = in + n * g_.in_size();
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox, dst += patch) {
        const int64_t kx0 = std::max<int64_t>(0, pad - ox);
        const int64_t kx1 = std::min<int64_t>(k, g_.width - ox + pad);
        for (int64_t ky = 0; ky < k; ++ky) {
          float* row = dst + ky * k * c;
          const int64_t iy = oy + ky - pad;
          if (iy < 0 || iy >= g_.height || kx1 <= kx0) {
            std::memset(row, 0, sizeof(float) * k * c);
            continue;
          }
          if (kx0 > 0) std::memset(row, 0, sizeof(float) * kx0 * c);
          const float* src = image + (iy * g_.width + ox + kx0 - pad) * c;
          std::memcpy(row + kx0 * c, src, sizeof(float) * (kx1 - kx0) * c);
          if (kx1 < k) std::memset(row + kx1 * c, 0, sizeof(float) * (k - kx1) * c);
        }
      }
    }
  }
}

void Conv2D::Col2Im(const float* dcol, int64_t batch, float* din) const {
  const int64_t oh = g_.out_height(), ow = g_.out_width(), c = g_.in_channels, k = g_.kernel;
  const int64_t pad = g_.pad(), patch = g_.patch();
  std::memset(din, 0, sizeof(float) * batch * g_.in_size());
  const float* src = dcol;
  for (int64_t n = 0; n < batch; ++n) {
    float* image = din + n * g_.in_size();
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox, src += patch) {
        const int64_t kx0 = std::max<int64_t>(0, pad - ox);
        const int64_t kx1 = std::min<int64_t>(k, g_.width - ox + pad);
        for (int64_t ky = 0; ky < k; ++ky) {
          const int64_t iy = oy + ky - pad;
          if (iy < 0 || iy >= g_.height || kx1 <= kx0) continue;
          const float* row = src + (ky * k + kx0) * c;
          float* dst = image + (iy * g_.width + ox + kx0 - pad) * c;
          const int64_t len = (kx1 - kx0) * c;
          for (int64_t i = 0; i < len; ++i) dst[i] += row[i];
        }
      }
    }
  }
}

namespace {

// A GEMM library spends its time packing when the patch (the GEMM's K) is tiny, as for a first
// layer on one-channel images, so small patches multiply row by row with the filters vectorised
// (kFilters fixed lets the compiler keep a row of outputs in registers).
constexpr int64_t kSmallPatch = 32;

// Eight floats in one vector register (GCC/Clang vector extension: AVX with -march=native, two SSE
// registers otherwise); unaligned loads and stores go through memcpy.
typedef float Vec8 __attribute__((vector_size(32)));

inline Vec8 Load8(const float* p) {
  Vec8 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <int kVecs>
void SmallPatchForwardFixed(const float* col, int64_t rows, int64_t patch, const float* w, const float* bias,
                            bool relu, float* out) {
  constexpr int64_t kFilters = 8 * kVecs;
  Vec8 b[kVecs];
  for (int j = 0; j < kVecs; ++j) b[j] = bias != nullptr ? Load8(bias + 8 * j) : Vec8{};
  const Vec8 zero = {};
  for (int64_t r = 0; r < rows; ++r) {
    Vec8 acc[kVecs];
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[j] = b[j];
    const float* c = col + r * patch;
    for (int64_t k = 0; k < patch; ++k) {
      const float a = c[k];
      const float* wk = w + k * kFilters;
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) acc[j] += a * Load8(wk + 8 * j);
    }
    float* o = out + r * kFilters;
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) {
      const Vec8 v = relu ? (acc[j] > zero ? acc[j] : zero) : acc[j];
      std::memcpy(o + 8 * j, &v, sizeof(v));
    }
  }
}

void SmallPatchForward(const float* col, int64_t rows, int64_t patch, const float* w, int64_t filters,
                       const float* bias, bool relu, float* out) {
  if (filters == 32) return SmallPatchForwardFixed<4>(col, rows, patch, w, bias, relu, out);
  if (filters == 16) return SmallPatchForwardFixed<2>(col, rows, patch, w, bias, relu, out);
  if (filters == 8) return SmallPatchForwardFixed<1>(col, rows, patch, w, bias, relu, out);
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out + r * filters;
    for (int64_t f = 0; f < filters; ++f) o[f] = bias != nullptr ? bias[f] : 0.f;
    for (int64_t k = 0; k < patch; ++k) {
      const float a = col[r * patch + k];
      for (int64_t f = 0; f < filters; ++f) o[f] += a * w[k * filters + f];
    }
    if (relu) {
      for (int64_t f = 0; f < filters; ++f) o[f] = o[f] < 0.f ? 0.f : o[f];
    }
  }
}

// dkernel = col^T * dout and dbias = column sums. Rows go in blocks that stay in L1; within a
// block each kernel row accumulates in registers.
template <int kVecs>
void SmallPatchWeightGradientFixed(const float* col, const float* dout, int64_t rows, int64_t patch, float* dkernel,
                                   float* dbias) {
  constexpr int64_t kFilters = 8 * kVecs, kBlock = 128;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    const int64_t r1 = std::min(rows, r0 + kBlock);
    for (int64_t k = -1; k < patch; ++k) {  // k = -1: the bias (a column of ones)
      if (k < 0 && dbias == nullptr) continue;
      Vec8 acc[kVecs] = {};
      for (int64_t r = r0; r < r1; ++r) {
        const float a = k < 0 ? 1.f : col[r * patch + k];
        const float* d = dout + r * kFilters;
#pragma GCC unroll 8
        for (int j = 0; j < kVecs; ++j) acc[j] += a * Load8(d + 8 * j);
      }
      float* dst = k < 0 ? dbias : dkernel + k * kFilters;
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) {
        const Vec8 v = Load8(dst + 8 * j) + acc[j];
        std::memcpy(dst + 8 * j, &v, sizeof(v));
      }
    }
  }
}

void SmallPatchWeightGradient(const float* col, const float* dout, int64_t rows, int64_t patch, int64_t filters,
                              float* dkernel, float* dbias) {
  std::memset(dkernel, 0, sizeof(float) * patch * filters);
  if (dbias != nullptr) std::memset(dbias, 0, sizeof(float) * filters);
  if (filters == 32) return SmallPatchWeightGradientFixed<4>(col, dout, rows, patch, dkernel, dbias);
  if (filters == 16) return SmallPatchWeightGradientFixed<2>(col, dout, rows, patch, dkernel, dbias);
  if (filters == 8) return SmallPatchWeightGradientFixed<1>(col, dout, rows, patch, dkernel, dbias);
  for (int64_t r = 0; r < rows; ++r) {
    const float* d = dout + r * filters;
    const float* c = col + r * patch;
    if (dbias != nullptr) {
      for (int64_t f = 0; f < filters; ++f) dbias[f] += d[f];
    }
    for (int64_t k = 0; k < patch; ++k) {
      for (int64_t f = 0; f < filters; ++f) dkernel[k * filters + f] += c[k] * d[f];
    }
  }
}

}  // namespace

void Conv2D::Forward(const float* in, int64_t batch, const float* kernel, const float* bias, float* out) {
  Im2Col(in, batch);
  const int64_t rows = batch * g_.out_height() * g_.out_width();
  if (g_.patch() < kSmallPatch) {
    SmallPatchForward(col_.data(), rows, g_.patch(), kernel, g_.filters, g_.bias ? bias : nullptr, g_.relu, out);
    return;
  }
  if (BlockedGemmFits(g_.filters)) {
    GemmNN(col_.data(), kernel, out, rows, g_.patch(), g_.filters);
  } else {
    MatrixMap(out, rows, g_.filters).noalias() =
        ConstMatrixMap(col_.data(), rows, g_.patch()) * ConstMatrixMap(kernel, g_.patch(), g_.filters);
  }
  AddBiasActivation(out, rows, g_.filters, g_.bias ? bias : nullptr, g_.relu);
}

void Conv2D::Backward(const float* out, float* dout, int64_t batch, const float* kernel, float* din, float* dkernel,
                      float* dbias) {
  const int64_t rows = batch * g_.out_height() * g_.out_width();
  if (g_.relu) ReluMask(out, dout, rows * g_.filters);
  ConstMatrixMap dy(dout, rows, g_.filters);
  ConstMatrixMap col(col_.data(), rows, g_.patch());
  if (g_.patch() < kSmallPatch) {
    SmallPatchWeightGradient(col_.data(), dout, rows, g_.patch(), g_.filters, dkernel, g_.bias ? dbias : nullptr);
  } else {
    if (BlockedGemmFits(g_.filters)) {
      GemmTN(col_.data(), dout, dkernel, rows, g_.patch(), g_.filters);
    } else {
      MatrixMap(dkernel, g_.patch(), g_.filters).noalias() = col.transpose() * dy;
    }
    if (g_.bias && dbias != nullptr) RowVectorMap(dbias, g_.filters) = dy.colwise().sum();
  }
  if (din == nullptr) return;
  dcol_.resize(col_.size());
  ConstMatrixMap w(kernel, g_.patch(), g_.filters);
  if (BlockedGemmFits(g_.patch())) {
    kernel_t_.resize(static_cast<size_t>(g_.patch() * g_.filters));
    MatrixMap(kernel_t_.data(), g_.filters, g_.patch()) = w.transpose();
    GemmNN(dout, kernel_t_.data(), dcol_.data(), rows, g_.filters, g_.patch());
  } else {
    MatrixMap(dcol_.data(), rows, g_.patch()).noalias() = dy * w.transpose();
  }
  Col2Im(dcol_.data(), batch, din);
}

}  // namespace pstrain
