// ReplicaSet: local replicas inside one worker (MirroredStrategy within a task). Each batch is
// split into R contiguous parts, each part runs on its own GradientComputer in its own thread,
// and the R gradients are summed into one, which is then pushed once. With the caller's loss
// scale the sum equals one computer over the whole batch. R = 1 is a plain pass-through.
// Thread-safety: one Compute/Evaluate at a time per object.
#ifndef PSTRAIN_WORKER_STEP_REPLICA_SET_H_
#define PSTRAIN_WORKER_STEP_REPLICA_SET_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "worker/cpu/thread_pool.h"
#include "worker/step/gradient_computer.h"

namespace pstrain {

// Builds a GradientComputer for `model` using `threads` compute threads.
using GradientComputerFactory =
    std::function<absl::StatusOr<std::unique_ptr<GradientComputer>>(const ModelSpec& model, int threads)>;

class ReplicaSet {
 public:
  // `threads` compute threads are shared out over `replicas` (at least one each). InvalidArgument
  // for replicas < 1 or threads < 1; errors of `factory` are returned as they are.
  static absl::StatusOr<std::unique_ptr<ReplicaSet>> Create(const ModelSpec& model, int replicas, int threads,
                                                            const GradientComputerFactory& factory);

  int replicas() const { return static_cast<int>(computers_.size()); }

  // As GradientComputer::Compute over the whole batch.
  absl::Status Compute(absl::Span<const Tensor> params, const Batch& batch, float loss_scale,
                       std::vector<Tensor>* grads, BatchMetrics* metrics);
  absl::Status Evaluate(absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* metrics);

 private:
  ReplicaSet(std::vector<std::unique_ptr<GradientComputer>> computers);
  // Splits `batch` into parts_[0..n) and returns n (fewer when the batch is smaller than R).
  int SplitBatch(const Batch& batch);

  std::vector<std::unique_ptr<GradientComputer>> computers_;
  ThreadPool pool_;
  std::vector<Batch> parts_;
  std::vector<std::vector<Tensor>> part_grads_;
  std::vector<BatchMetrics> part_metrics_;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_STEP_REPLICA_SET_H_
