// A CTR model's row movers for one CPU level: embedding rows copied into the tower's input, and
// the tower's input gradient added into per-unique-id rows. Whole vectors first, then a partial
// one; every element is one copy or one addition in example order, so each level gives the
// same bits.
#include "common/platform/simd.h"
#include "worker/cpu/isa/isa_kernels.h"

namespace pstrain {
namespace PSTRAIN_ISA_NS {

void GatherRows(const float* rows, const int32_t* positions, int64_t positions_stride, int64_t n, int64_t dim,
                float* out, int64_t out_stride) {
  const int tail = static_cast<int>(dim % kLanes);
  const int64_t whole = dim - tail;
  for (int64_t b = 0; b < n; ++b) {
    const float* src = rows + positions[b * positions_stride] * dim;
    float* dst = out + b * out_stride;
    for (int64_t j = 0; j < whole; j += kLanes) Store(dst + j, Load(src + j));
    if (tail > 0) StoreN(dst + whole, LoadN(src + whole, tail), tail);
  }
}

void ScatterAddRows(const float* in, int64_t in_stride, const int32_t* positions, int64_t positions_stride, int64_t n,
                    int64_t dim, float* rows) {
  const int tail = static_cast<int>(dim % kLanes);
  const int64_t whole = dim - tail;
  for (int64_t b = 0; b < n; ++b) {
    const float* src = in + b * in_stride;
    float* dst = rows + positions[b * positions_stride] * dim;
    for (int64_t j = 0; j < whole; j += kLanes) Store(dst + j, Load(dst + j) + Load(src + j));
    if (tail > 0) StoreN(dst + whole, LoadN(dst + whole, tail) + LoadN(src + whole, tail), tail);
  }
}

}  // namespace PSTRAIN_ISA_NS
}  // namespace pstrain
