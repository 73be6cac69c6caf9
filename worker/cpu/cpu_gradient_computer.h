// The CPU GradientComputer (the reference implementation): splits each batch into one contiguous
// chunk per thread, runs a CpuModel per thread on its chunk (each with its own buffers) and sums
// the per-thread gradients. With loss scaling the sum equals one pass over the whole batch.
// Thread-safety: one Compute/Evaluate at a time per object (GradientComputer's rule).
#ifndef PSTRAIN_WORKER_CPU_CPU_GRADIENT_COMPUTER_H_
#define PSTRAIN_WORKER_CPU_CPU_GRADIENT_COMPUTER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "worker/step/gradient_computer.h"

namespace pstrain {

// Builds the model described by `model` for `threads` (>= 1) threads (a CTR model: see
// ctr_gradient_computer.h). InvalidArgument naming the
// layer when the model cannot be built, or for threads < 1.
absl::StatusOr<std::unique_ptr<GradientComputer>> NewCpuGradientComputer(const ModelSpec& model, int threads);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_CPU_GRADIENT_COMPUTER_H_
