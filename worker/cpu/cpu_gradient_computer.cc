#include "worker/cpu/cpu_gradient_computer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "worker/cpu/cpu_kernels.h"
#include "worker/cpu/cpu_model.h"
#include "worker/cpu/ctr_gradient_computer.h"
#include "worker/cpu/graph_gradient_computer.h"
#include "worker/cpu/thread_pool.h"

namespace pstrain {
namespace {

class CpuGradientComputer : public GradientComputer {
 public:
  CpuGradientComputer(std::vector<std::unique_ptr<CpuModel>> replicas)
      : replicas_(std::move(replicas)), pool_(static_cast<int>(replicas_.size())) {}

  absl::Status Compute(absl::Span<const Tensor> params, const Batch& batch, float loss_scale,
                       std::vector<Tensor>* grads, BatchMetrics* metrics) override;
  absl::Status Evaluate(absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* metrics) override;

 private:
  absl::Status Check(absl::Span<const Tensor> params, const Batch& batch) const;

  std::vector<std::unique_ptr<CpuModel>> replicas_;
  ThreadPool pool_;
  std::vector<std::vector<Tensor>> replica_grads_;  // [thread][variable], thread 0 unused
  std::vector<const float*> param_ptrs_;
  std::vector<std::vector<float*>> grad_ptrs_;
  std::vector<BatchMetrics> replica_metrics_;
};

absl::Status CpuGradientComputer::Check(absl::Span<const Tensor> params, const Batch& batch) const {
  const CpuModel& m = *replicas_[0];
  const auto& vars = m.variables();
  if (params.size() != vars.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", vars.size(), " variables but ", params.size(), " parameters were given"));
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    if (params[i].dtype() != DType::kFloat32 || params[i].shape() != vars[i].shape) {
      return absl::InvalidArgumentError(absl::StrCat("parameter ", vars[i].name, " has shape ",
                                                     ShapeString(params[i].shape()), ", the model needs float32 ",
                                                     ShapeString(vars[i].shape)));
    }
  }
  const int64_t n = batch.size();
  if (n > 0 && (batch.inputs.dtype() != DType::kFloat32 || batch.inputs.num_elements() != n * m.input_size())) {
    return absl::InvalidArgumentError(absl::StrCat("batch inputs of shape ", ShapeString(batch.inputs.shape()),
                                                   " do not fit the model's input of ", m.input_size(),
                                                   " values per example"));
  }
  if (m.classification()) {
    if (static_cast<int64_t>(batch.labels.size()) != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch has ", n, " examples but ", batch.labels.size(), " labels"));
    }
    for (int32_t label : batch.labels) {
      if (label < 0 || label >= m.output_size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("label ", label, " is outside the model's ", m.output_size(), " classes"));
      }
    }
  } else if (static_cast<int64_t>(batch.targets.size()) != n * m.output_size()) {
    return absl::InvalidArgumentError(absl::StrCat("batch has ", n, " examples but ", batch.targets.size(),
                                                   " targets (", m.output_size(), " per example expected)"));
  }
  return absl::OkStatus();
}

absl::Status CpuGradientComputer::Compute(absl::Span<const Tensor> params, const Batch& batch, float loss_scale,
                                          std::vector<Tensor>* grads, BatchMetrics* metrics) {
  RETURN_IF_ERROR(Check(params, batch));
  const size_t nv = params.size();
  const size_t threads = replicas_.size();
  bool fits = grads->size() == nv;
  for (size_t i = 0; fits && i < nv; ++i) fits = (*grads)[i].shape() == params[i].shape();
  if (!fits) {
    grads->clear();
    for (const Tensor& p : params) grads->emplace_back(DType::kFloat32, p.shape());
  }
  if (replica_grads_.size() != threads) {
    replica_grads_.assign(threads, {});
    for (size_t t = 1; t < threads; ++t) {
      for (const Tensor& p : params) replica_grads_[t].emplace_back(DType::kFloat32, p.shape());
    }
  }
  param_ptrs_.resize(nv);
  grad_ptrs_.resize(threads);
  for (auto& ptrs : grad_ptrs_) ptrs.resize(nv);
  for (size_t i = 0; i < nv; ++i) {
    param_ptrs_[i] = params[i].data<float>();
    grad_ptrs_[0][i] = (*grads)[i].data<float>();
    for (size_t t = 1; t < threads; ++t) grad_ptrs_[t][i] = replica_grads_[t][i].data<float>();
  }
  replica_metrics_.assign(threads, BatchMetrics{});
  const int64_t n = batch.size();
  const int64_t in_size = replicas_[0]->input_size(), out_size = replicas_[0]->output_size();
  const bool cls = replicas_[0]->classification();
  if (n == 0) {
    for (Tensor& g : *grads) std::fill(g.flat().begin(), g.flat().end(), 0.f);
    return absl::OkStatus();
  }
  const int chunks = pool_.RunChunks(n, [&](int t, int64_t begin, int64_t count) {
    replicas_[t]->Compute(param_ptrs_.data(), batch.inputs.data<float>() + begin * in_size,
                          cls ? batch.labels.data() + begin : nullptr,
                          cls ? nullptr : batch.targets.data() + begin * out_size, count, loss_scale,
                          grad_ptrs_[t].data(), &replica_metrics_[t]);
  });
  const CpuKernels& kernels = ActiveCpuKernels();
  for (int t = 1; t < chunks; ++t) {
    for (size_t i = 0; i < nv; ++i) {
      kernels.add((*grads)[i].data<float>(), replica_grads_[t][i].data<float>(), params[i].num_elements());
    }
  }
  for (int t = 0; t < chunks; ++t) AddBatchMetrics(replica_metrics_[t], metrics);
  return absl::OkStatus();
}

absl::Status CpuGradientComputer::Evaluate(absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* metrics) {
  RETURN_IF_ERROR(Check(params, batch));
  param_ptrs_.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) param_ptrs_[i] = params[i].data<float>();
  replica_metrics_.assign(replicas_.size(), BatchMetrics{});
  const int64_t n = batch.size();
  if (n == 0) return absl::OkStatus();
  const int64_t in_size = replicas_[0]->input_size(), out_size = replicas_[0]->output_size();
  const bool cls = replicas_[0]->classification();
  const int chunks = pool_.RunChunks(n, [&](int t, int64_t begin, int64_t count) {
    replicas_[t]->Evaluate(param_ptrs_.data(), batch.inputs.data<float>() + begin * in_size,
                           cls ? batch.labels.data() + begin : nullptr,
                           cls ? nullptr : batch.targets.data() + begin * out_size, count, &replica_metrics_[t]);
  });
  for (int t = 0; t < chunks; ++t) AddBatchMetrics(replica_metrics_[t], metrics);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<GradientComputer>> NewCpuGradientComputer(const ModelSpec& model, int threads) {
  if (model.is_graph()) return NewGraphGradientComputer(model, threads);
  if (model.is_ctr()) return NewCpuCtrGradientComputer(model, threads);
  if (threads < 1) return absl::InvalidArgumentError(absl::StrCat("threads must be at least 1, got ", threads));
  std::vector<std::unique_ptr<CpuModel>> replicas;
  for (int t = 0; t < threads; ++t) {
    ASSIGN_OR_RETURN(auto m, CpuModel::Create(model));
    replicas.push_back(std::move(m));
  }
  return std::unique_ptr<GradientComputer>(new CpuGradientComputer(std::move(replicas)));
}

}  // namespace pstrain
