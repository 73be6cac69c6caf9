#include "worker/cpu/embedding_kernels.h"

#include <algorithm>
#include <cmath>
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
    if (rows[f] == nullptr) continue;
    kernels.gather_rows(rows[f], positions + f, fields, batch, layout.dims[f], out + layout.offsets[f], layout.width);
  }
}

void ScatterAddField(const EmbeddingLayout& layout, int field, const float* din, const int32_t* positions,
                     int64_t batch, float* grad_rows) {
  const int64_t fields = static_cast<int64_t>(layout.dims.size());
  ActiveCpuKernels().scatter_add_rows(din + layout.offsets[field], layout.width, positions + field, fields, batch,
                                      layout.dims[field], grad_rows);
}

void BagCoefficients(const std::string& combiner, const int64_t* offsets, int64_t bags, const float* weights,
                     std::vector<float>* coef) {
  const int64_t total = bags == 0 ? 0 : offsets[bags] - offsets[0];
  coef->resize(total);
  const bool mean = combiner == "mean", sqrtn = combiner == "sqrtn";
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t begin = offsets[b] - offsets[0], end = offsets[b + 1] - offsets[0];
    double denominator = 1.0;
    if (mean || sqrtn) {
      double sum = 0.0;
      for (int64_t i = begin; i < end; ++i) {
        const double w = weights == nullptr ? 1.0 : weights[i];
        sum += mean ? w : w * w;
      }
      denominator = sqrtn ? std::sqrt(sum) : sum;
    }
    for (int64_t i = begin; i < end; ++i) {
      const double w = weights == nullptr ? 1.0 : weights[i];
      (*coef)[i] = denominator == 0.0 ? 0.f : static_cast<float>(w / denominator);
    }
  }
}

void CombineBags(const EmbeddingLayout& layout, int field, const float* rows, const BagView& bag, int64_t batch,
                 float* out) {
  const int64_t dim = layout.dims[field];
  for (int64_t b = 0; b < batch; ++b) {
    float* o = out + b * layout.width + layout.offsets[field];
    std::fill(o, o + dim, 0.f);
    for (int64_t i = bag.offsets[b]; i < bag.offsets[b + 1]; ++i) {
      const float c = bag.coef[i];
      const float* row = rows + static_cast<int64_t>(bag.positions[i]) * dim;
      for (int64_t d = 0; d < dim; ++d) o[d] += c * row[d];
    }
  }
}

void ScatterAddBags(const EmbeddingLayout& layout, int field, const float* din, const BagView& bag, int64_t batch,
                    float* grad_rows) {
  const int64_t dim = layout.dims[field];
  for (int64_t b = 0; b < batch; ++b) {
    const float* g = din + b * layout.width + layout.offsets[field];
    for (int64_t i = bag.offsets[b]; i < bag.offsets[b + 1]; ++i) {
      const float c = bag.coef[i];
      float* row = grad_rows + static_cast<int64_t>(bag.positions[i]) * dim;
      for (int64_t d = 0; d < dim; ++d) row[d] += c * g[d];
    }
  }
}

}  // namespace pstrain
