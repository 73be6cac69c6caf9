// Max-pool kernels for one CPU level, vectorised over channels: one row of windows at a time, so a
// convolution can pool its output while the rows are still in L1.
#include "common/platform/simd.h"
#include "worker/cpu/isa/isa_kernels.h"

namespace pstrain {
namespace PSTRAIN_ISA_NS {
namespace {

// One vector of `w` channels (w <= kLanes) of one window. kPool > 0 fixes the window at compile
// time (the common 2x2 unrolls fully); 0 reads it from `pool`.
template <bool kFull, int kPool>
inline void PoolVector(const float* in, int64_t row_stride, int64_t pixel_stride, int64_t pool_arg, int w, float* out,
                       int32_t* arg) {
  const int64_t pool = kPool > 0 ? kPool : pool_arg;
  Vec best = kFull ? Load(in) : LoadN(in, w);
  VecI where = {};
  for (int64_t dy = 0; dy < pool; ++dy) {
    for (int64_t dx = 0; dx < pool; ++dx) {
      if (dy == 0 && dx == 0) continue;
      const float* p = in + dy * row_stride + dx * pixel_stride;
      const Vec v = kFull ? Load(p) : LoadN(p, w);
      const VecI bigger = v > best;  // strict: the first maximum wins
      best = bigger ? v : best;
      where = bigger ? SplatI(static_cast<int32_t>(dy * pool + dx)) : where;
    }
  }
  if (kFull) {
    Store(out, best);
    StoreI(arg, where);
  } else {
    StoreN(out, best, w);
    StoreIN(arg, where, w);
  }
}

template <bool kFull, int kPool>
inline void UnpoolVector(const float* dout, const int32_t* arg, const float* pooled, int64_t pool_arg, int w,
                         float* din, int64_t row_stride, int64_t pixel_stride) {
  const int64_t pool = kPool > 0 ? kPool : pool_arg;
  Vec g = kFull ? Load(dout) : LoadN(dout, w);
  const VecI where = kFull ? LoadI(arg) : LoadIN(arg, w);
  if (pooled != nullptr) g = (kFull ? Load(pooled) : LoadN(pooled, w)) > Vec{} ? g : Vec{};
  for (int64_t dy = 0; dy < pool; ++dy) {
    for (int64_t dx = 0; dx < pool; ++dx) {
      const Vec v = where == SplatI(static_cast<int32_t>(dy * pool + dx)) ? g : Vec{};
      float* p = din + dy * row_stride + dx * pixel_stride;
      if (kFull) {
        Store(p, v);
      } else {
        StoreN(p, v, w);
      }
    }
  }
}

template <int kPool>
void PoolRow(const float* in, int64_t row_stride, int64_t pixel_stride, int64_t out_width, int64_t channels,
             int64_t pool, float* out, int32_t* arg) {
  for (int64_t x = 0; x < out_width; ++x) {
    const float* window = in + x * pool * pixel_stride;
    float* o = out + x * channels;
    int32_t* a = arg + x * channels;
    int64_t ch = 0;
    for (; ch + kLanes <= channels; ch += kLanes) {
      PoolVector<true, kPool>(window + ch, row_stride, pixel_stride, pool, kLanes, o + ch, a + ch);
    }
    if (ch < channels) {
      PoolVector<false, kPool>(window + ch, row_stride, pixel_stride, pool, static_cast<int>(channels - ch), o + ch,
                               a + ch);
    }
  }
}

template <int kPool>
void UnpoolRow(const float* dout, const int32_t* arg, const float* pooled, int64_t out_width, int64_t channels,
               int64_t pool, float* din, int64_t row_stride, int64_t pixel_stride) {
  for (int64_t x = 0; x < out_width; ++x) {
    const int64_t at = x * channels;
    float* window = din + x * pool * pixel_stride;
    const float* p = pooled != nullptr ? pooled + at : nullptr;
    int64_t ch = 0;
    for (; ch + kLanes <= channels; ch += kLanes) {
      UnpoolVector<true, kPool>(dout + at + ch, arg + at + ch, p != nullptr ? p + ch : nullptr, pool, kLanes,
                                window + ch, row_stride, pixel_stride);
    }
    if (ch < channels) {
      UnpoolVector<false, kPool>(dout + at + ch, arg + at + ch, p != nullptr ? p + ch : nullptr, pool,
                                 static_cast<int>(channels - ch), window + ch, row_stride, pixel_stride);
    }
  }
}

}  // namespace

void MaxPoolRow(const float* in, int64_t row_stride, int64_t pixel_stride, int64_t out_width, int64_t channels,
                int64_t pool, float* out, int32_t* arg) {
  if (pool == 2) return PoolRow<2>(in, row_stride, pixel_stride, out_width, channels, pool, out, arg);
  PoolRow<0>(in, row_stride, pixel_stride, out_width, channels, pool, out, arg);
}

void MaxPoolRowBackward(const float* dout, const int32_t* arg, const float* pooled, int64_t out_width, int64_t channels,
                        int64_t pool, float* din, int64_t row_stride, int64_t pixel_stride) {
  if (pool == 2) return UnpoolRow<2>(dout, arg, pooled, out_width, channels, pool, din, row_stride, pixel_stride);
  UnpoolRow<0>(dout, arg, pooled, out_width, channels, pool, din, row_stride, pixel_stride);
}

}  // namespace PSTRAIN_ISA_NS
}  // namespace pstrain
