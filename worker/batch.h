// One batch of examples in host memory: NHWC float inputs and integer class labels (or float
// regression targets for MSE models).
// Thread-safety: a value; no sharing rules of its own.
#ifndef PSTRAIN_WORKER_BATCH_H_
#define PSTRAIN_WORKER_BATCH_H_

#include <cstdint>
#include <vector>

#include "common/tensor.h"

namespace pstrain {

struct Batch {
  Tensor inputs;                 // [B, ...input_shape], float32
  std::vector<int32_t> labels;   // sparse_categorical_crossentropy: B class ids
  std::vector<float> targets;    // mse: B * outputs values
  int64_t size() const { return inputs.rank() == 0 ? 0 : inputs.dim(0); }
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_BATCH_H_
