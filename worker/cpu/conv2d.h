// Conv2D kernel on the CPU: NHWC input, Keras [kh, kw, in, filters] kernel, stride 1, `valid` or
// `same` padding, optional fused bias and ReLU, and optionally a fused max-pool (a max_pool2d
// layer right after it): then Forward writes the pooled output and the full-size convolution
// output never leaves the cache, and only the pixels a pool window covers are computed (those
// that `valid` pooling drops contribute nothing).
//
// No im2col buffer: the GEMMs read their rows straight from the input (one row per output pixel,
// one run of kernel * channels floats per kernel row; cpu_kernels.h), and the input gradient is
// added straight into the input's layout. `same` padding convolves a zero-padded copy.
// Runs the CPU level active when the object was built.
// Thread-safety: one call at a time per object; use one object per thread.
#ifndef PSTRAIN_WORKER_CPU_CONV2D_H_
#define PSTRAIN_WORKER_CPU_CONV2D_H_

#include <cstdint>
#include <vector>

#include "worker/cpu/cpu_kernels.h"

namespace pstrain {

struct Conv2DGeometry {
  int64_t height = 0, width = 0, in_channels = 0;
  int64_t filters = 0, kernel = 0;
  bool same = false;  // `same` padding: output size = input size
  bool relu = false;  // fused activation
  bool bias = true;
  int64_t pool = 0;  // > 0: a fused max-pool of this window (stride = window, `valid`) follows

  // The convolution's own output.
  int64_t out_height() const { return same ? height : height - kernel + 1; }
  int64_t out_width() const { return same ? width : width - kernel + 1; }
  int64_t pad() const { return same ? (kernel - 1) / 2 : 0; }  // top/left (TF puts the extra on the bottom/right)
  int64_t patch() const { return kernel * kernel * in_channels; }
  int64_t in_size() const { return height * width * in_channels; }
  // What Forward writes per example: the pooled output when pool > 0.
  int64_t result_height() const { return pool > 0 ? out_height() / pool : out_height(); }
  int64_t result_width() const { return pool > 0 ? out_width() / pool : out_width(); }
  int64_t out_size() const { return result_height() * result_width() * filters; }
};

class Conv2D {
 public:
  explicit Conv2D(const Conv2DGeometry& g);

  const Conv2DGeometry& geometry() const { return g_; }

  // out[batch, result_height, result_width, filters] = pool(act(conv(in, kernel) + bias)).
  // `bias` may be null when !g.bias.
  void Forward(const float* in, int64_t batch, const float* kernel, const float* bias, float* out);

  // REQUIRES: the last Forward on this object used the same `in` and `batch`; `out` is its output
  // (the ReLU mask). `dout` may be modified (masked). Writes (not accumulates) dkernel, dbias
  // (may be null when !g.bias) and din (skipped when null).
  void Backward(const float* in, const float* out, float* dout, int64_t batch, const float* kernel, float* din,
                float* dkernel, float* dbias);

 private:
  // The rows of the GEMMs: output pixels in the computed region (covered by pool windows).
  int64_t rows_high() const { return g_.pool > 0 ? g_.result_height() * g_.pool : g_.out_height(); }
  int64_t rows_wide() const { return g_.pool > 0 ? g_.result_width() * g_.pool : g_.out_width(); }
  int64_t padded_width() const { return g_.width + (g_.same ? g_.kernel - 1 : 0); }
  int64_t padded_size() const { return (g_.height + (g_.same ? g_.kernel - 1 : 0)) * padded_width() * g_.in_channels; }
  // The im2col rows of `rows` output pixels starting at `src`, offsets from offsets_[first].
  RowsIn ImageRows(const float* src, int64_t first) const;
  RowsOut ImageRowsOut(float* dst, int64_t first) const;
  const float* PadInput(const float* in, int64_t batch);
  void CropGradient(int64_t batch, float* din) const;
  // dconv_ for images [n0, n0 + count) from the pooled gradient (and the pooled output for ReLU).
  void UnpoolGradient(const float* out, const float* dout, int64_t n0, int64_t count);

  Conv2DGeometry g_;
  const CpuKernels* kernels_;
  int64_t chunk_images_;          // images per GEMM call in Backward (and Forward without pool)
  std::vector<int64_t> offsets_;  // per row of a chunk: its first input float, from the chunk's start
  std::vector<float> padded_;     // `same`: the zero-padded input
  std::vector<float> dpadded_;    // `same`: its gradient
  std::vector<float> packed_;     // the kernel in the GEMM's layout (forward) or transposed (input gradient)
  std::vector<float> tile_;       // fused pool: conv output of one row of windows [pool * rows_wide, Fp]
  std::vector<int32_t> argmax_;   // fused pool: the winning window position per pooled output
  std::vector<float> dconv_;      // gradient of a chunk's conv output [rows, Fp]
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_CONV2D_H_
