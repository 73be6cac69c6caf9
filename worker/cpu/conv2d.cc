#include "worker/cpu/conv2d.h"

#include <algorithm>
#include <cstring>

#include "worker/cpu/gemm.h"

namespace pstrain {
namespace {

// Rows per GEMM call: enough to amortise the call, few enough that a chunk's gradient stays in L2.
constexpr int64_t kChunkRows = 512;

}  // namespace

Conv2D::Conv2D(const Conv2DGeometry& g) : g_(g), kernels_(&ActiveCpuKernels()) {
  const int64_t per_image = rows_high() * rows_wide();
  chunk_images_ = std::max<int64_t>(1, kChunkRows / std::max<int64_t>(1, per_image));
  offsets_.reserve(static_cast<size_t>(chunk_images_ * per_image));
  for (int64_t n = 0; n < chunk_images_; ++n) {
    for (int64_t y = 0; y < rows_high(); ++y) {
      for (int64_t x = 0; x < rows_wide(); ++x) {
        offsets_.push_back(n * padded_size() + (y * padded_width() + x) * g_.in_channels);
      }
    }
  }
}

RowsIn Conv2D::ImageRows(const float* src, int64_t first) const {
  return RowsIn{src,       offsets_.data() + first,    0,
                g_.kernel, g_.kernel * g_.in_channels, padded_width() * g_.in_channels};
}

RowsOut Conv2D::ImageRowsOut(float* dst, int64_t first) const {
  return RowsOut{dst,       offsets_.data() + first,    0,
                 g_.kernel, g_.kernel * g_.in_channels, padded_width() * g_.in_channels};
}

const float* Conv2D::PadInput(const float* in, int64_t batch) {
  if (!g_.same) return in;
  // Borders are never written, so they stay zero from the allocation on.
  padded_.resize(static_cast<size_t>(batch * padded_size()));
  const int64_t row = g_.width * g_.in_channels, pad = g_.pad();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t y = 0; y < g_.height; ++y) {
      std::memcpy(padded_.data() + n * padded_size() + ((y + pad) * padded_width() + pad) * g_.in_channels,
                  in + n * g_.in_size() + y * row, sizeof(float) * row);
    }
  }
  return padded_.data();
}

void Conv2D::CropGradient(int64_t batch, float* din) const {
  const int64_t row = g_.width * g_.in_channels, pad = g_.pad();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t y = 0; y < g_.height; ++y) {
      std::memcpy(din + n * g_.in_size() + y * row,
                  dpadded_.data() + n * padded_size() + ((y + pad) * padded_width() + pad) * g_.in_channels,
                  sizeof(float) * row);
    }
  }
}

void Conv2D::Forward(const float* in, int64_t batch, const float* kernel, const float* bias, float* out) {
  const float* src = PadInput(in, batch);
  const int64_t f = g_.filters;
  const PackBArgs pack{kernel, f, 1, g_.patch(), 1, f};
  packed_.resize(static_cast<size_t>(kernels_->packed_b_size(pack)));
  GemmNNArgs gemm;
  gemm.packed_b = kernels_->pack_b(pack, packed_.data());
  gemm.bias = g_.bias ? bias : nullptr;
  gemm.relu = g_.relu;
  if (g_.pool == 0) {
    for (int64_t n0 = 0; n0 < batch; n0 += chunk_images_) {
      const int64_t count = std::min(chunk_images_, batch - n0);
      gemm.a = ImageRows(src + n0 * padded_size(), 0);
      gemm.rows = count * rows_high() * rows_wide();
      gemm.c = MatrixOut(out + n0 * g_.out_size(), f, f);
      kernels_->gemm_nn(gemm);
    }
    return;
  }
  // One row of pool windows at a time: its conv output goes to a cache-sized tile, then is pooled.
  const int64_t fp = RoundUpToLanes(f), band = g_.pool * rows_wide();
  const int64_t ph = g_.result_height(), pw = g_.result_width();
  tile_.resize(static_cast<size_t>(band * fp));
  argmax_.resize(static_cast<size_t>(batch * g_.out_size()));
  gemm.rows = band;
  gemm.c = MatrixOut(tile_.data(), f, fp);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t by = 0; by < ph; ++by) {
      gemm.a = ImageRows(src + n * padded_size(), by * band);
      kernels_->gemm_nn(gemm);
      const int64_t at = (n * ph + by) * pw * f;
      kernels_->max_pool_row(tile_.data(), rows_wide() * fp, fp, pw, f, g_.pool, out + at, argmax_.data() + at);
    }
  }
}

void Conv2D::UnpoolGradient(const float* out, const float* dout, int64_t n0, int64_t count) {
  const int64_t f = g_.filters, fp = RoundUpToLanes(f), band = g_.pool * rows_wide();
  const int64_t ph = g_.result_height(), pw = g_.result_width(), per_image = rows_high() * rows_wide();
  dconv_.resize(static_cast<size_t>(count * per_image * fp));
  for (int64_t n = 0; n < count; ++n) {
    for (int64_t by = 0; by < ph; ++by) {
      const int64_t at = ((n0 + n) * ph + by) * pw * f;
      kernels_->max_pool_row_backward(dout + at, argmax_.data() + at, g_.relu ? out + at : nullptr, pw, f, g_.pool,
                                      dconv_.data() + (n * per_image + by * band) * fp, rows_wide() * fp, fp);
    }
  }
}

void Conv2D::Backward(const float* in, const float* out, float* dout, int64_t batch, const float* kernel, float* din,
                      float* dkernel, float* dbias) {
  const int64_t f = g_.filters, per_image = rows_high() * rows_wide();
  const float* src = g_.same ? padded_.data() : in;
  float* dsrc = nullptr;
  if (din != nullptr && g_.same) {
    dpadded_.assign(static_cast<size_t>(batch * padded_size()), 0.f);
    dsrc = dpadded_.data();
  } else if (din != nullptr) {
    std::memset(din, 0, sizeof(float) * batch * g_.in_size());
    dsrc = din;
  }
  std::memset(dkernel, 0, sizeof(float) * g_.patch() * f);
  const bool want_dbias = g_.bias && dbias != nullptr;
  if (want_dbias) std::memset(dbias, 0, sizeof(float) * f);
  const float* packed_t = nullptr;
  if (dsrc != nullptr) {  // the input gradient multiplies by kernel^T: B[t, j] = kernel[j, t]
    const PackBArgs pack{kernel, 1, f, f, g_.kernel, g_.kernel * g_.in_channels};
    packed_.resize(static_cast<size_t>(kernels_->packed_b_size(pack)));
    packed_t = kernels_->pack_b(pack, packed_.data());
  }
  for (int64_t n0 = 0; n0 < batch; n0 += chunk_images_) {
    const int64_t count = std::min(chunk_images_, batch - n0), rows = count * per_image;
    const float* d = nullptr;
    int64_t ldd = RoundUpToLanes(f);
    if (g_.pool > 0) {
      UnpoolGradient(out, dout, n0, count);
      d = dconv_.data();
    } else {
      float* chunk = dout + n0 * g_.out_size();
      if (g_.relu) kernels_->relu_backward(out + n0 * g_.out_size(), chunk, chunk, rows * f);
      d = PadRowsForTN(chunk, rows, f, &dconv_, &ldd);
    }
    const GemmTNArgs tn{ImageRows(src + n0 * padded_size(), 0), rows, d, ldd, f, dkernel, f};
    kernels_->gemm_tn(tn);
    if (want_dbias) kernels_->column_sums(d, rows, f, ldd, dbias, /*accumulate=*/true);
    if (dsrc == nullptr) continue;
    GemmNNArgs nn;  // the input gradient, added into the input's layout (col2im)
    nn.a = MatrixIn(d, f, ldd);
    nn.rows = rows;
    nn.packed_b = packed_t;
    nn.c = ImageRowsOut(dsrc + n0 * padded_size(), 0);
    nn.accumulate = true;
    kernels_->gemm_nn(nn);
  }
  if (din != nullptr && g_.same) CropGradient(batch, din);
}

}  // namespace pstrain
