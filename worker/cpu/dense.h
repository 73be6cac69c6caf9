// Dense (fully connected) kernel on the CPU: out[B, units] = act(in[B, inputs] * kernel + bias),
// Keras [inputs, units] kernel, optional fused bias and ReLU. Forward and the input gradient are
// one GEMM each (bias and ReLU applied as the results leave the registers), the kernel gradient a
// transposed GEMM, all run by the CPU level active when the object was built (cpu_kernels.h).
// Thread-safety: one call at a time per object (it keeps packing scratch); use one per thread.
#ifndef PSTRAIN_WORKER_CPU_DENSE_H_
#define PSTRAIN_WORKER_CPU_DENSE_H_

#include <cstdint>
#include <vector>

#include "worker/cpu/cpu_kernels.h"

namespace pstrain {

struct DenseGeometry {
  int64_t inputs = 0, units = 0;
  bool relu = false;
  bool bias = true;
};

class Dense {
 public:
  explicit Dense(const DenseGeometry& g) : g_(g), kernels_(&ActiveCpuKernels()) {}
  const DenseGeometry& geometry() const { return g_; }

  // `bias` may be null when !g.bias.
  void Forward(const float* in, int64_t batch, const float* kernel, const float* bias, float* out) const;

  // `in`/`out` are the forward call's input and output; `dout` is masked in place when relu.
  // Writes dkernel, dbias (null when !g.bias) and din (skipped when null).
  void Backward(const float* in, const float* out, float* dout, int64_t batch, const float* kernel, float* din,
                float* dkernel, float* dbias) const;

 private:
  DenseGeometry g_;
  const CpuKernels* kernels_;
  mutable std::vector<float> packed_;  // the kernel (or its transpose) in the GEMM's layout
  mutable std::vector<float> padded_;  // dout with rows padded for the transposed GEMM
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_DENSE_H_
