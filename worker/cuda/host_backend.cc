#include "worker/cuda/host_backend.h"

#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

namespace pstrain {

absl::StatusOr<float*> HostBackend::Malloc(int64_t count) {
  float* p = new (std::nothrow) float[count];
  if (p == nullptr) return absl::ResourceExhaustedError(absl::StrCat("malloc on ", name_, ": out of memory"));
  std::memset(p, 0xff, count * sizeof(float));  // NaN garbage: a read before a write shows up in tests
  ++counters_->live_allocations;
  ++counters_->total_allocations;
  return p;
}

void HostBackend::Free(float* p) {
  delete[] p;
  --counters_->live_allocations;
}

absl::Status HostBackend::CopyToDevice(DeviceStream, float* dst, const float* src, int64_t count) {
  std::memcpy(dst, src, count * sizeof(float));
  return absl::OkStatus();
}

absl::Status HostBackend::CopyToHost(DeviceStream, float* dst, const float* src, int64_t count) {
  std::memcpy(dst, src, count * sizeof(float));
  return absl::OkStatus();
}

absl::Status HostBackend::Fill(float* dst, float value, int64_t count) {
  for (int64_t i = 0; i < count; ++i) dst[i] = value;
  return absl::OkStatus();
}

absl::Status HostBackend::Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                               const float* b, int ldb, float beta, float* c, int ldc) {
  // Column-major: element (r, s) of a matrix with leading dimension ld is at [r + s * ld].
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      float sum = 0.0f;
      for (int p = 0; p < k; ++p) {
        const float av = trans_a ? a[p + i * lda] : a[i + p * lda];
        const float bv = trans_b ? b[j + p * ldb] : b[p + j * ldb];
        sum += av * bv;
      }
      float& out = c[i + j * ldc];
      out = alpha * sum + (beta == 0.0f ? 0.0f : beta * out);  // beta 0: C is not read (BLAS rule)
    }
  }
  return absl::OkStatus();
}

absl::Status HostBackend::Im2Col(const ConvGeometry& g, const float* x, float* col) {
  for (int i = 0; i < g.col_size(); ++i) col[i] = Im2ColValue(g, x, i);
  return absl::OkStatus();
}

absl::Status HostBackend::Col2Im(const ConvGeometry& g, const float* dcol, float* dx) {
  for (int i = 0; i < g.in_size(); ++i) dx[i] = Col2ImValue(g, dcol, i);
  return absl::OkStatus();
}

absl::Status HostBackend::BiasAct(int rows, int cols, const float* x, const float* bias, bool relu, float* y) {
  for (int i = 0; i < rows * cols; ++i) y[i] = BiasActValue(x, bias, cols, relu, i);
  return absl::OkStatus();
}

absl::Status HostBackend::ReluGrad(int count, const float* y, const float* dy, float* dx) {
  for (int i = 0; i < count; ++i) dx[i] = ReluGradValue(y, dy, i);
  return absl::OkStatus();
}

absl::Status HostBackend::MaxPoolForward(const PoolGeometry& g, const float* x, float* y) {
  for (int o = 0; o < g.out_size(); ++o) y[o] = MaxPoolForwardValue(g, x, o);
  return absl::OkStatus();
}

absl::Status HostBackend::MaxPoolBackward(const PoolGeometry& g, const float* x, const float* dy, float* dx) {
  for (int i = 0; i < g.in_size(); ++i) dx[i] = MaxPoolBackwardValue(g, x, dy, i);
  return absl::OkStatus();
}

absl::Status HostBackend::SoftmaxXent(int batch, int classes, const float* logits, const float* labels, float scale,
                                      float* dlogits, float* loss, float* correct) {
  for (int b = 0; b < batch; ++b) {
    SoftmaxXentExample(classes, logits + b * classes, labels[b], scale, dlogits + b * classes, loss + b, correct + b);
  }
  return absl::OkStatus();
}

absl::Status HostBackend::Mse(int batch, int outputs, const float* y, const float* targets, float scale, float* dy,
                              float* loss) {
  for (int b = 0; b < batch; ++b) {
    MseExample(outputs, y + b * outputs, targets + b * outputs, scale, dy + b * outputs, loss + b);
  }
  return absl::OkStatus();
}

}  // namespace pstrain
