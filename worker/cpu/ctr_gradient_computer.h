// The CPU GradientComputer of CTR models: splits each batch into one contiguous chunk per thread
// (a CtrModel per thread: gather, dense tower, binary cross-entropy, backward), then turns the
// tower-input gradient into each table's gradient rows with the work split by field, every field
// adding its examples in batch order, and sums the tower's gradients over the threads in thread
// order. So the result does not depend on which thread ran what, and a table's rows come out
// summed per unique id, ready to push. A bag field (EmbeddingFieldSpec::combiner, Batch::bags)
// takes its combiner's coefficients per id (BagCoefficients) once per batch; its rows' gradients
// are the field's gradient times each id's coefficient, added in batch order likewise.
// Thread-safety: one Compute/Evaluate at a time per object (GradientComputer's rule).
#ifndef PSTRAIN_WORKER_CPU_CTR_GRADIENT_COMPUTER_H_
#define PSTRAIN_WORKER_CPU_CTR_GRADIENT_COMPUTER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "worker/step/gradient_computer.h"

namespace pstrain {

// InvalidArgument when `model` is not a CTR model of dense layers, or for threads < 1.
absl::StatusOr<std::unique_ptr<GradientComputer>> NewCpuCtrGradientComputer(const ModelSpec& model, int threads);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_CTR_GRADIENT_COMPUTER_H_
