// Per-element bodies of the device kernels (im2col, col2im, bias + activation, max pooling, losses).
// Each body computes ONE output element (or one example) from a flat index, so the same code runs
// inside a CUDA grid-stride kernel (cuda_kernels.cu) and serially on the CPU (host_backend.cc), which
// lets CI check the index arithmetic without a GPU. Layouts are Keras': NHWC activations, HWIO conv
// kernels; indices are 32-bit (the planner rejects buffers of 2^31 elements or more).
// Thread-safety: pure functions of their arguments.
#ifndef PSTRAIN_WORKER_CUDA_LAYER_KERNELS_H_
#define PSTRAIN_WORKER_CUDA_LAYER_KERNELS_H_

#include <math.h>

#if defined(__CUDACC__)
#define PSTRAIN_HD __host__ __device__ inline
#else
#define PSTRAIN_HD inline
#endif

namespace pstrain {

// A stride-1 2-D convolution. Padding follows TensorFlow: 'same' pads k-1 in total, the smaller half
// (floor) on top/left; 'valid' pads nothing.
struct ConvGeometry {
  int batch, in_h, in_w, in_c;
  int out_h, out_w, out_c;
  int k;                                                         // square kernel k x k
  int pad_top, pad_left;                                         // 0 for 'valid'
  PSTRAIN_HD int rows() const { return batch * out_h * out_w; }  // im2col rows: one per output pixel
  PSTRAIN_HD int patch() const { return k * k * in_c; }          // im2col columns, (ky, kx, ci) order
  PSTRAIN_HD int col_size() const { return rows() * patch(); }
  PSTRAIN_HD int in_size() const { return batch * in_h * in_w * in_c; }
};

// Max pooling with a p x p window and stride p ('valid': trailing rows/columns that do not fill a
// window are dropped, as Keras does).
struct PoolGeometry {
  int batch, in_h, in_w, c;
  int out_h, out_w;
  int p;
  PSTRAIN_HD int in_size() const { return batch * in_h * in_w * c; }
  PSTRAIN_HD int out_size() const { return batch * out_h * out_w * c; }
};

// col[i] for i in [0, rows*patch): row = (b, oy, ox), column = (ky, kx, ci); zero in the padding.
PSTRAIN_HD float Im2ColValue(const ConvGeometry& g, const float* x, int i) {
  const int col = i % g.patch();
  const int row = i / g.patch();
  const int ci = col % g.in_c;
  const int kx = (col / g.in_c) % g.k;
  const int ky = col / (g.in_c * g.k);
  const int ox = row % g.out_w;
  const int oy = (row / g.out_w) % g.out_h;
  const int b = row / (g.out_w * g.out_h);
  const int iy = oy + ky - g.pad_top;
  const int ix = ox + kx - g.pad_left;
  if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) return 0.0f;
  return x[((b * g.in_h + iy) * g.in_w + ix) * g.in_c + ci];
}

// dx[i] for i in [0, in_size): the sum of the im2col-gradient entries that read input element i.
// A gather (each input element sums its own k*k terms) so no atomics are needed and the result is
// deterministic.
PSTRAIN_HD float Col2ImValue(const ConvGeometry& g, const float* dcol, int i) {
  const int ci = i % g.in_c;
  const int ix = (i / g.in_c) % g.in_w;
  const int iy = (i / (g.in_c * g.in_w)) % g.in_h;
  const int b = i / (g.in_c * g.in_w * g.in_h);
  float sum = 0.0f;
  for (int ky = 0; ky < g.k; ++ky) {
    const int oy = iy + g.pad_top - ky;
    if (oy < 0 || oy >= g.out_h) continue;
    for (int kx = 0; kx < g.k; ++kx) {
      const int ox = ix + g.pad_left - kx;
      if (ox < 0 || ox >= g.out_w) continue;
      const int row = (b * g.out_h + oy) * g.out_w + ox;
      sum += dcol[row * g.patch() + (ky * g.k + kx) * g.in_c + ci];
    }
  }
  return sum;
}

// y[i] = act(x[i] + bias[i % cols]); `bias` may be null, `relu` selects max(0, .). x may equal y.
PSTRAIN_HD float BiasActValue(const float* x, const float* bias, int cols, bool relu, int i) {
  float v = x[i] + (bias != nullptr ? bias[i % cols] : 0.0f);
  return relu && v < 0.0f ? 0.0f : v;
}

// The ReLU gradient through the layer OUTPUT y (y > 0 exactly where the pre-activation was > 0).
PSTRAIN_HD float ReluGradValue(const float* y, const float* dy, int i) { return y[i] > 0.0f ? dy[i] : 0.0f; }

// Index (into x) of the window maximum for output element `o`. Ties: the FIRST maximum in row-major
// window order (strict '>' while scanning), the same rule as the CPU reference.
PSTRAIN_HD int MaxPoolArgmax(const PoolGeometry& g, const float* x, int o) {
  const int c = o % g.c;
  const int ox = (o / g.c) % g.out_w;
  const int oy = (o / (g.c * g.out_w)) % g.out_h;
  const int b = o / (g.c * g.out_w * g.out_h);
  int best = ((b * g.in_h + oy * g.p) * g.in_w + ox * g.p) * g.c + c;
  for (int dy = 0; dy < g.p; ++dy) {
    for (int dx = 0; dx < g.p; ++dx) {
      const int idx = ((b * g.in_h + oy * g.p + dy) * g.in_w + ox * g.p + dx) * g.c + c;
      if (x[idx] > x[best]) best = idx;
    }
  }
  return best;
}

PSTRAIN_HD float MaxPoolForwardValue(const PoolGeometry& g, const float* x, int o) { return x[MaxPoolArgmax(g, x, o)]; }

// dx[i]: dy of the window that input element i belongs to when i is that window's argmax, else 0
// (stride == window, so windows never overlap and each input has at most one window).
PSTRAIN_HD float MaxPoolBackwardValue(const PoolGeometry& g, const float* x, const float* dy, int i) {
  const int c = i % g.c;
  const int ix = (i / g.c) % g.in_w;
  const int iy = (i / (g.c * g.in_w)) % g.in_h;
  const int b = i / (g.c * g.in_w * g.in_h);
  const int oy = iy / g.p, ox = ix / g.p;
  if (oy >= g.out_h || ox >= g.out_w) return 0.0f;  // in the dropped border
  const int o = ((b * g.out_h + oy) * g.out_w + ox) * g.c + c;
  return MaxPoolArgmax(g, x, o) == i ? dy[o] : 0.0f;
}

// Softmax + sparse categorical cross-entropy from logits for one example. `label` is a class id
// stored as float (exact below 2^24). Writes dlogits = (softmax - onehot) * scale, the unscaled
// loss, and correct = 1 when the FIRST maximal logit is the label.
PSTRAIN_HD void SoftmaxXentExample(int classes, const float* z, float label, float scale, float* dz, float* loss,
                                   float* correct) {
  int argmax = 0;
  for (int c = 1; c < classes; ++c) {
    if (z[c] > z[argmax]) argmax = c;
  }
  const float m = z[argmax];
  float sum = 0.0f;
  for (int c = 0; c < classes; ++c) sum += expf(z[c] - m);
  const int y = static_cast<int>(label);
  const float log_sum = logf(sum);
  *loss = m + log_sum - z[y];
  *correct = argmax == y ? 1.0f : 0.0f;
  for (int c = 0; c < classes; ++c) {
    const float p = expf(z[c] - m - log_sum);
    dz[c] = (p - (c == y ? 1.0f : 0.0f)) * scale;
  }
}

// Keras mean squared error for one example: loss = mean_j (y_j - t_j)^2, dy_j = 2 (y_j - t_j) / n * scale.
PSTRAIN_HD void MseExample(int n, const float* y, const float* t, float scale, float* dy, float* loss) {
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float d = y[j] - t[j];
    sum += d * d;
    dy[j] = 2.0f * d / static_cast<float>(n) * scale;
  }
  *loss = sum / static_cast<float>(n);
}

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CUDA_LAYER_KERNELS_H_
