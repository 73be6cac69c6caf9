// The backward pass of a layer that runs one of worker/cpu's float kernels (Dense, Conv2D): the
// kernel masks the output gradient in place and writes every gradient, so it gets a copy of the
// output gradient (or the caller's own, RunOn) and, for the weight gradients the caller does not
// want, scratch of their size.
// The buffers are kept across steps.
// Thread-safety: one call at a time per object (the layer's rule).
#ifndef PSTRAIN_WORKER_GRAPH_FAST_BACKWARD_H_
#define PSTRAIN_WORKER_GRAPH_FAST_BACKWARD_H_

#include <cstdint>
#include <vector>

#include "worker/graph/array.h"

namespace pstrain {

class FastBackward {
 public:
  // Runs kernel.Backward over `rows` (the kernel's batch) with weights[0] the kernel and, when
  // `bias_size` > 0, weights[1] the bias; din[0], dweights[0] and dweights[1] are skipped where null.
  // `dout` is copied first, since the kernel overwrites the output gradient it is given.
  template <typename Kernel>
  void Run(Kernel& kernel, const Array<float>& x, int64_t rows, const std::vector<const Array<float>*>& weights,
           const Array<float>& out, const Array<float>& dout, const std::vector<Array<float>*>& din,
           const std::vector<Array<float>*>& dweights, int64_t bias_size) {
    dout_.assign(dout.data.begin(), dout.data.end());
    RunOn(kernel, x, rows, weights, out, dout_.data(), din, dweights, bias_size);
  }

  // The same on an output gradient the caller no longer needs, which the kernel overwrites.
  template <typename Kernel>
  void RunOn(Kernel& kernel, const Array<float>& x, int64_t rows, const std::vector<const Array<float>*>& weights,
             const Array<float>& out, float* dout, const std::vector<Array<float>*>& din,
             const std::vector<Array<float>*>& dweights, int64_t bias_size) {
    float* dkernel = dweights[0] != nullptr ? dweights[0]->data.data() : Scratch(&dkernel_, weights[0]->data.size());
    float* dbias = bias_size == 0            ? nullptr
                   : dweights[1] != nullptr ? dweights[1]->data.data()
                                            : Scratch(&dbias_, static_cast<size_t>(bias_size));
    kernel.Backward(x.data.data(), out.data.data(), dout, rows, weights[0]->data.data(),
                    din[0] != nullptr ? din[0]->data.data() : nullptr, dkernel, dbias);
  }

 private:
  static float* Scratch(std::vector<float>* buffer, size_t size) {
    buffer->resize(size);
    return buffer->data();
  }

  std::vector<float> dout_, dkernel_, dbias_;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_GRAPH_FAST_BACKWARD_H_
