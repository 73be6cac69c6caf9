#include "worker/cpu/embedding_kernels.h"

#include <cstring>

namespace pstrain {

EmbeddingLayout MakeEmbeddingLayout(int64_t num_numeric, std::vector<int64_t> dims) {
  EmbeddingLayout layout;
  layout.num_numeric = num_numeric;
  layout.width = num_numeric;
  for (int64_t d : dims) {
    layout.offsets.push_back(layout.width);
    layout.width += d;
  }
  layout.dims = std::move(dims);
  return layout;
}

void GatherConcat(const EmbeddingLayout& layout, const float* numeric, absl::Span<const float* const> rows,
                  const int32_t* positions, int64_t batch, float* out) {
  const int64_t fields = static_cast<int64_t>(layout.dims.size());
  for (int64_t b = 0; b < batch; ++b) {
    float* x = out + b * layout.width;
    if (layout.num_numeric > 0) {
      std::memcpy(x, numeric + b * layout.num_numeric, sizeof(float) * layout.num_numeric);
    }
    const int32_t* pos = positions + b * fields;
    for (int64_t f = 0; f < fields; ++f) {
      const int64_t dim = layout.dims[f];
      std::memcpy(x + layout.offsets[f], rows[f] + pos[f] * dim, sizeof(float) * dim);
    }
  }
}

void ScatterAddField(const EmbeddingLayout& layout, int field, const float* din, const int32_t* positions,
                     int64_t batch, float* grad_rows) {
  const int64_t fields = static_cast<int64_t>(layout.dims.size());
  const int64_t dim = layout.dims[field], offset = layout.offsets[field];
  for (int64_t b = 0; b < batch; ++b) {
    float* __restrict dst = grad_rows + positions[b * fields + field] * dim;
    const float* __restrict src = din + b * layout.width + offset;
    for (int64_t j = 0; j < dim; ++j) dst[j] += src[j];
  }
}

}  // namespace pstrain
