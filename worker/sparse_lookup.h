// The rows of each embedding table one step touches: what a worker pulls and pushes for a table
// (VariableSpec::sparse) instead of the whole variable.
// Thread-safety: a value; no sharing rules of its own.
#ifndef PSTRAIN_WORKER_SPARSE_LOOKUP_H_
#define PSTRAIN_WORKER_SPARSE_LOOKUP_H_

#include <cstdint>
#include <vector>

namespace pstrain {

struct SparseLookup {
  // Per variable index (ModelVariables() order): the distinct GLOBAL row ids of the table the
  // step touches, in any order; empty for dense variables.
  std::vector<std::vector<int64_t>> unique_ids;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_SPARSE_LOOKUP_H_
