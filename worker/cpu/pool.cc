#include "worker/cpu/pool.h"

#include <cstring>

namespace pstrain {

void MaxPool2D::Forward(const float* in, int64_t batch, float* out) {
  const int64_t oh = g_.out_height(), ow = g_.out_width(), c = g_.channels, p = g_.pool;
  argmax_.resize(static_cast<size_t>(batch * g_.out_size()));
  int32_t* arg = argmax_.data();
  for (int64_t n = 0; n < batch; ++n) {
    const float* image = in + n * g_.in_size();
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox, out += c, arg += c) {
        // Start from the window's top-left pixel, then sweep the rest channel-vectorised.
        const int32_t first = static_cast<int32_t>(((oy * p) * g_.width + ox * p) * c);
        for (int64_t ch = 0; ch < c; ++ch) {
          out[ch] = image[first + ch];
          arg[ch] = first + static_cast<int32_t>(ch);
        }
        for (int64_t dy = 0; dy < p; ++dy) {
          for (int64_t dx = 0; dx < p; ++dx) {
            if (dy == 0 && dx == 0) continue;
            const int32_t base = static_cast<int32_t>(((oy * p + dy) * g_.width + ox * p + dx) * c);
            for (int64_t ch = 0; ch < c; ++ch) {
              const float v = image[base + ch];
              const bool bigger = v > out[ch];
              out[ch] = bigger ? v : out[ch];
              arg[ch] = bigger ? base + static_cast<int32_t>(ch) : arg[ch];
            }
          }
        }
      }
    }
  }
}

// Windows tile the input without overlap, so every covered input element is written once (the
// gradient where it won the max, zero elsewhere); only the dropped border is zeroed separately.
void MaxPool2D::Backward(const float* dout, int64_t batch, float* din) const {
  const int64_t oh = g_.out_height(), ow = g_.out_width(), c = g_.channels, p = g_.pool;
  const bool ragged = oh * p != g_.height || ow * p != g_.width;
  if (ragged) std::memset(din, 0, sizeof(float) * batch * g_.in_size());
  const int32_t* arg = argmax_.data();
  for (int64_t n = 0; n < batch; ++n) {
    float* image = din + n * g_.in_size();
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox, dout += c, arg += c) {
        for (int64_t dy = 0; dy < p; ++dy) {
          for (int64_t dx = 0; dx < p; ++dx) {
            const int32_t base = static_cast<int32_t>(((oy * p + dy) * g_.width + ox * p + dx) * c);
            float* dst = image + base;
            for (int64_t ch = 0; ch < c; ++ch) dst[ch] = arg[ch] == base + ch ? dout[ch] : 0.f;
          }
        }
      }
    }
  }
}

}  // namespace pstrain
