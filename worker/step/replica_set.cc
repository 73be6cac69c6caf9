#include "worker/step/replica_set.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "worker/data/shard_iterator.h"

namespace pstrain {

absl::StatusOr<std::unique_ptr<ReplicaSet>> ReplicaSet::Create(const ModelSpec& model, int replicas, int threads,
                                                               const GradientComputerFactory& factory) {
  if (replicas < 1) return absl::InvalidArgumentError(absl::StrCat("replicas must be at least 1, got ", replicas));
  if (threads < 1) return absl::InvalidArgumentError(absl::StrCat("threads must be at least 1, got ", threads));
  std::vector<std::unique_ptr<GradientComputer>> computers;
  for (int r = 0; r < replicas; ++r) {
    // Spread the threads: the first (threads % replicas) replicas get one more.
    const int mine = std::max(1, threads / replicas + (r < threads % replicas ? 1 : 0));
    ASSIGN_OR_RETURN(auto c, factory(model, mine));
    computers.push_back(std::move(c));
  }
  return std::unique_ptr<ReplicaSet>(new ReplicaSet(std::move(computers)));
}

ReplicaSet::ReplicaSet(std::vector<std::unique_ptr<GradientComputer>> computers)
    : computers_(std::move(computers)),
      pool_(static_cast<int>(computers_.size())),
      parts_(computers_.size()),
      part_grads_(computers_.size()),
      part_metrics_(computers_.size()) {}

int ReplicaSet::SplitBatch(const Batch& batch) {
  const int64_t n = batch.size();
  const int parts = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(replicas(), n)));
  for (int r = 0; r < parts; ++r) SliceBatch(batch, n * r / parts, n * (r + 1) / parts, &parts_[r]);
  return parts;
}

absl::Status ReplicaSet::Compute(absl::Span<const Tensor> params, const Batch& batch, float loss_scale,
                                 std::vector<Tensor>* grads, BatchMetrics* metrics) {
  if (replicas() == 1 || batch.size() <= 1) return computers_[0]->Compute(params, batch, loss_scale, grads, metrics);
  const int parts = SplitBatch(batch);
  std::vector<absl::Status> results(parts);
  part_metrics_.assign(computers_.size(), BatchMetrics{});
  pool_.Run(parts, [&](int r) {
    std::vector<Tensor>* out = r == 0 ? grads : &part_grads_[r];
    results[r] = computers_[r]->Compute(params, parts_[r], loss_scale, out, &part_metrics_[r]);
  });
  for (const absl::Status& s : results) RETURN_IF_ERROR(s);
  for (int r = 0; r < parts; ++r) {
    if (r > 0) {
      for (size_t v = 0; v < grads->size(); ++v) {
        float* dst = (*grads)[v].data<float>();
        const float* src = part_grads_[r][v].data<float>();
        for (int64_t i = 0; i < (*grads)[v].num_elements(); ++i) dst[i] += src[i];
      }
    }
    AddBatchMetrics(part_metrics_[r], metrics);
  }
  return absl::OkStatus();
}

absl::Status ReplicaSet::Evaluate(absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* metrics) {
  if (replicas() == 1 || batch.size() <= 1) return computers_[0]->Evaluate(params, batch, metrics);
  const int parts = SplitBatch(batch);
  std::vector<absl::Status> results(parts);
  part_metrics_.assign(computers_.size(), BatchMetrics{});
  pool_.Run(parts, [&](int r) { results[r] = computers_[r]->Evaluate(params, parts_[r], &part_metrics_[r]); });
  for (const absl::Status& s : results) RETURN_IF_ERROR(s);
  for (int r = 0; r < parts; ++r) {
    AddBatchMetrics(part_metrics_[r], metrics);
  }
  return absl::OkStatus();
}

}  // namespace pstrain
