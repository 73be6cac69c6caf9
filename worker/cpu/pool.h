// MaxPool2D kernel on the CPU (NHWC, square window, stride = window, `valid`: trailing rows and
// columns that do not fill a window are dropped, as in Keras). Forward records which window
// position won for every output so Backward is a scatter. Runs the CPU level active when the
// object was built (cpu_kernels.h). A max-pool right after a conv2d is fused into Conv2D instead.
// Thread-safety: one call at a time per object (it keeps the argmax buffer).
#ifndef PSTRAIN_WORKER_CPU_POOL_H_
#define PSTRAIN_WORKER_CPU_POOL_H_

#include <cstdint>
#include <vector>

#include "worker/cpu/cpu_kernels.h"

namespace pstrain {

struct PoolGeometry {
  int64_t height = 0, width = 0, channels = 0;
  int64_t pool = 2;
  int64_t out_height() const { return height / pool; }
  int64_t out_width() const { return width / pool; }
  int64_t in_size() const { return height * width * channels; }
  int64_t out_size() const { return out_height() * out_width() * channels; }
};

class MaxPool2D {
 public:
  explicit MaxPool2D(const PoolGeometry& g) : g_(g), kernels_(&ActiveCpuKernels()) {}
  const PoolGeometry& geometry() const { return g_; }

  void Forward(const float* in, int64_t batch, float* out);
  // REQUIRES: follows Forward with the same batch. Writes din (every element).
  void Backward(const float* dout, int64_t batch, float* din) const;

 private:
  PoolGeometry g_;
  const CpuKernels* kernels_;
  std::vector<int32_t> argmax_;  // per output: the window position of the max (dy * pool + dx)
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_POOL_H_
