// One batch of examples in host memory: NHWC float inputs and integer class labels (or float
// regression targets for MSE models). A CTR model's batch: the numeric features as `inputs`
// [B, numeric_inputs], the 0/1 labels as `targets` [B], the categorical ids [B, fields] and,
// once IdDeduper (sparse_lookup.h) has run for the step, each id's position among its table's
// unique ids. A bag field (a multi-hot feature) has its ids in `bags` instead, and the positions of
// each of them in `bag_positions`.
// Thread-safety: a value; no sharing rules of its own.
#ifndef PSTRAIN_WORKER_STEP_BATCH_H_
#define PSTRAIN_WORKER_STEP_BATCH_H_

#include <cstdint>
#include <vector>

#include "common/tensor/tensor.h"
#include "worker/data/ctr_data.h"

namespace pstrain {

struct Batch {
  Tensor inputs;                 // [B, ...input_shape], float32 (CTR: [B, numeric_inputs])
  std::vector<int32_t> labels;   // sparse_categorical_crossentropy: B class ids
  std::vector<float> targets;    // mse: B * outputs values; binary_crossentropy: B labels, 0 or 1
  std::vector<int64_t> ids;      // CTR: [B, fields] row-major: ids in [0, vocabulary) or dynamic keys
  std::vector<int32_t> positions;  // CTR: [B, fields], index into SparseLookup::unique_ids[table]
  std::vector<IdBags> bags;        // CTR bag fields, in field order: B examples each
  std::vector<std::vector<int32_t>> bag_positions;  // per bag, per id: as `positions`
  int64_t size() const { return inputs.rank() == 0 ? 0 : inputs.dim(0); }
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_STEP_BATCH_H_
