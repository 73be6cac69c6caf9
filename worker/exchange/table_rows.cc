#include "worker/exchange/table_rows.h"

#include <cstring>

namespace pstrain {

void GatherRows(const Tensor& table, absl::Span<const int64_t> ids, Tensor* rows) {
  const int64_t dim = table.dim(1);
  const std::vector<int64_t> shape = {static_cast<int64_t>(ids.size()), dim};
  if (rows->shape() != shape || rows->dtype() != DType::kFloat32) *rows = Tensor(DType::kFloat32, shape);
  const float* src = table.data<float>();
  float* dst = rows->data<float>();
  for (size_t u = 0; u < ids.size(); ++u) std::memcpy(dst + u * dim, src + ids[u] * dim, sizeof(float) * dim);
}

void GatherLookupRows(const std::vector<Tensor>& tables, const SparseLookup& lookup, std::vector<Tensor>* params) {
  for (size_t i = 0; i < tables.size(); ++i) {
    if (tables[i].rank() == 0) continue;
    GatherRows(tables[i], lookup.unique_ids[i], &(*params)[i]);
  }
}

}  // namespace pstrain
