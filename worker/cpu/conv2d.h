// Conv2D kernel on the CPU: NHWC input, Keras [kh, kw, in, filters] kernel, stride 1, `valid` or
// `same` padding, optional fused bias and ReLU. im2col + one Eigen GEMM forward; GEMMs and col2im
// backward. The object keeps its im2col buffer between Forward and Backward (reused across steps).
// Thread-safety: one call at a time per object; use one object per thread.
#ifndef PSTRAIN_WORKER_CPU_CONV2D_H_
#define PSTRAIN_WORKER_CPU_CONV2D_H_

#include <cstdint>
#include <vector>

namespace pstrain {

struct Conv2DGeometry {
  int64_t height = 0, width = 0, in_channels = 0;
  int64_t filters = 0, kernel = 0;
  bool same = false;  // `same` padding: output size = input size
  bool relu = false;  // fused activation
  bool bias = true;

  int64_t out_height() const { return same ? height : height - kernel + 1; }
  int64_t out_width() const { return same ? width : width - kernel + 1; }
  int64_t pad() const { return same ? (kernel - 1) / 2 : 0; }  // top/left (TF puts the extra on the bottom/right)
  int64_t patch() const { return kernel * kernel * in_channels; }
  int64_t in_size() const { return height * width * in_channels; }
  int64_t out_size() const { return out_height() * out_width() * filters; }
};

class Conv2D {
 public:
  explicit Conv2D(const Conv2DGeometry& g) : g_(g) {}

  const Conv2DGeometry& geometry() const { return g_; }

  // out[batch, oh, ow, filters] = act(conv(in, kernel) + bias). `bias` may be null when !g.bias.
  void Forward(const float* in, int64_t batch, const float* kernel, const float* bias, float* out);

  // REQUIRES: the last Forward on this object used the same `in` and `batch`. `out` is that call's
  // output (for the ReLU mask); `dout` is modified in place (masked). Writes (not accumulates)
  // dkernel, dbias (may be null when !g.bias) and din (skipped when null).
  void Backward(const float* out, float* dout, int64_t batch, const float* kernel, float* din, float* dkernel,
                float* dbias);

 private:
  void Im2Col(const float* in, int64_t batch);
  void Col2Im(const float* dcol, int64_t batch, float* din) const;

  Conv2DGeometry g_;
  std::vector<float> col_;   // [batch * oh * ow, patch]
  std::vector<float> dcol_;  // same shape, backward scratch
  std::vector<float> kernel_t_;  // [filters, patch]: the kernel transposed for the input gradient
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_CONV2D_H_
