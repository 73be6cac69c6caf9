// Dense (fully connected) kernel on the CPU: out[B, units] = act(in[B, inputs] * kernel + bias),
// Keras [inputs, units] kernel, optional fused bias and ReLU, one Eigen GEMM each way.
// Thread-safety: stateless apart from the geometry; Forward/Backward are const and reentrant.
#ifndef PSTRAIN_WORKER_CPU_DENSE_H_
#define PSTRAIN_WORKER_CPU_DENSE_H_

#include <cstdint>

namespace pstrain {

struct DenseGeometry {
  int64_t inputs = 0, units = 0;
  bool relu = false;
  bool bias = true;
};

class Dense {
 public:
  explicit Dense(const DenseGeometry& g) : g_(g) {}
  const DenseGeometry& geometry() const { return g_; }

  // `bias` may be null when !g.bias.
  void Forward(const float* in, int64_t batch, const float* kernel, const float* bias, float* out) const;

  // `in`/`out` are the forward call's input and output; `dout` is masked in place when relu.
  // Writes dkernel, dbias (null when !g.bias) and din (skipped when null).
  void Backward(const float* in, const float* out, float* dout, int64_t batch, const float* kernel, float* din,
                float* dkernel, float* dbias) const;

 private:
  DenseGeometry g_;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_DENSE_H_
