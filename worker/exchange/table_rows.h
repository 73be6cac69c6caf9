// Rows of embedding tables held whole in this process (`pstrain train`, `pstrain evaluate`): the
// same [U_i, dim] parameters a worker pulls from the ps for a step's SparseLookup, gathered from
// memory instead.
// Thread-safety: pure functions over caller-owned tensors.
#ifndef PSTRAIN_WORKER_EXCHANGE_TABLE_ROWS_H_
#define PSTRAIN_WORKER_EXCHANGE_TABLE_ROWS_H_

#include <vector>

#include "absl/types/span.h"
#include "common/tensor/tensor.h"
#include "worker/exchange/sparse_lookup.h"

namespace pstrain {

// rows = table[ids] ([ids.size(), dim], reallocated only when its shape changes).
// REQUIRES: table is float32 [V, dim] and every id is in [0, V).
void GatherRows(const Tensor& table, absl::Span<const int64_t> ids, Tensor* rows);

// For every table i (tables[i] non-empty): params[i] = GatherRows(tables[i], unique_ids[i]).
// Other entries of `params` are left alone. REQUIRES: params->size() >= tables.size().
void GatherLookupRows(const std::vector<Tensor>& tables, const SparseLookup& lookup, std::vector<Tensor>* params);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_EXCHANGE_TABLE_ROWS_H_
