#include "worker/cpu/pool.h"

#include <cstring>

namespace pstrain {

void MaxPool2D::Forward(const float* in, int64_t batch, float* out) {
  const int64_t oh = g_.out_height(), ow = g_.out_width(), c = g_.channels, p = g_.pool;
  argmax_.resize(static_cast<size_t>(batch * g_.out_size()));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t at = (n * oh + oy) * ow * c;
      kernels_->max_pool_row(in + n * g_.in_size() + oy * p * g_.width * c, g_.width * c, c, ow, c, p, out + at,
                             argmax_.data() + at);
    }
  }
}

// Windows tile the input without overlap, so every covered input element is written once (the
// gradient where it won the max, zero elsewhere); only the dropped border is zeroed separately.
void MaxPool2D::Backward(const float* dout, int64_t batch, float* din) const {
  const int64_t oh = g_.out_height(), ow = g_.out_width(), c = g_.channels, p = g_.pool;
  if (oh * p != g_.height || ow * p != g_.width) std::memset(din, 0, sizeof(float) * batch * g_.in_size());
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t at = (n * oh + oy) * ow * c;
      kernels_->max_pool_row_backward(dout + at, argmax_.data() + at, nullptr, ow, c, p,
                                      din + n * g_.in_size() + oy * p * g_.width * c, g_.width * c, c);
    }
  }
}

}  // namespace pstrain
