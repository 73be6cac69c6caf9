#include "worker/cpu/embedding_kernels.h"

#include <cstring>

#include "worker/cpu/cpu_kernels.h"

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
  const CpuKernels& kernels = ActiveCpuKernels();
  const int64_t fields = static_cast<int64_t>(layout.dims.size());
  if (layout.num_numeric > 0) {
    for (int64_t b = 0; b < batch; ++b) {
      std::memcpy(out + b * layout.width, numeric + b * layout.num_numeric, sizeof(float) * layout.num_numeric);
    }
  }
  for (int64_t f = 0; f < fields; ++f) {
    kernels.gather_rows(rows[f], positions + f, fields, batch, layout.dims[f], out + layout.offsets[f], layout.width);
  }
}

void ScatterAddField(const EmbeddingLayout& layout, int field, const float* din, const int32_t* positions,
                     int64_t batch, float* grad_rows) {
  const int64_t fields = static_cast<int64_t>(layout.dims.size());
  ActiveCpuKernels().scatter_add_rows(din + layout.offsets[field], layout.width, positions + field, fields, batch,
                                      layout.dims[field], grad_rows);
}

}  // namespace pstrain
