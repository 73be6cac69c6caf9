#include "worker/cpu/conv2d.h"

#include <algorithm>
#include <cstring>

#include "worker/cpu/eigen_maps.h"

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

void Conv2D::Forward(const float* in, int64_t batch, const float* kernel, const float* bias, float* out) {
  Im2Col(in, batch);
  const int64_t rows = batch * g_.out_height() * g_.out_width();
  ConstMatrixMap col(col_.data(), rows, g_.patch());
  ConstMatrixMap w(kernel, g_.patch(), g_.filters);
  MatrixMap y(out, rows, g_.filters);
  y.noalias() = col * w;
  AddBiasActivation(out, rows, g_.filters, g_.bias ? bias : nullptr, g_.relu);
}

void Conv2D::Backward(const float* out, float* dout, int64_t batch, const float* kernel, float* din, float* dkernel,
                      float* dbias) {
  const int64_t rows = batch * g_.out_height() * g_.out_width();
  if (g_.relu) ReluMask(out, dout, rows * g_.filters);
  ConstMatrixMap dy(dout, rows, g_.filters);
  ConstMatrixMap col(col_.data(), rows, g_.patch());
  MatrixMap dw(dkernel, g_.patch(), g_.filters);
  dw.noalias() = col.transpose() * dy;
  if (g_.bias && dbias != nullptr) RowVectorMap(dbias, g_.filters) = dy.colwise().sum();
  if (din == nullptr) return;
  dcol_.resize(col_.size());
  MatrixMap dcol(dcol_.data(), rows, g_.patch());
  ConstMatrixMap w(kernel, g_.patch(), g_.filters);
  dcol.noalias() = dy * w.transpose();
  Col2Im(dcol_.data(), batch, din);
}

}  // namespace pstrain
