#include "worker/cpu/ctr_gradient_computer.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "worker/cpu/cpu_kernels.h"
#include "worker/cpu/ctr_model.h"
#include "worker/cpu/thread_pool.h"

namespace pstrain {
namespace {

class CtrGradientComputer : public GradientComputer {
 public:
  explicit CtrGradientComputer(std::vector<std::unique_ptr<CtrModel>> replicas)
      : replicas_(std::move(replicas)), pool_(static_cast<int>(replicas_.size())) {}

  absl::Status Compute(absl::Span<const Tensor> params, const Batch& batch, float loss_scale,
                       std::vector<Tensor>* grads, BatchMetrics* metrics) override;
  absl::Status Evaluate(absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* metrics) override;

 private:
  const CtrModel& model() const { return *replicas_[0]; }
  absl::Status Check(absl::Span<const Tensor> params, const Batch& batch) const;
  void PrepareGrads(absl::Span<const Tensor> params, std::vector<Tensor>* grads);
  void SumTowerGrads(int chunks, std::vector<Tensor>* grads);
  // The batch's bags as views per field (bag_views_; nullptr when no field is a bag), with
  // their combiner coefficients. REQUIRES: Check passed.
  const BagView* PrepareBags(const Batch& batch);
  // Per-chunk views: each bag field's offsets advanced to the chunk's first example.
  const BagView* ChunkBags(const BagView* bags, int t, int64_t begin);

  std::vector<std::unique_ptr<CtrModel>> replicas_;
  ThreadPool pool_;
  std::vector<std::vector<Tensor>> replica_grads_;  // [thread][variable], tower only; thread 0 unused
  std::vector<const float*> param_ptrs_;
  std::vector<std::vector<float*>> grad_ptrs_;  // [thread][variable]
  std::vector<BatchMetrics> replica_metrics_;
  std::vector<float> din_;  // [batch, tower input width]
  std::vector<BagView> bag_views_;                // [field]
  std::vector<std::vector<BagView>> chunk_bags_;  // [thread][field]
  std::vector<std::vector<float>> coef_;          // [bag]: per id
};

absl::Status CtrGradientComputer::Check(absl::Span<const Tensor> params, const Batch& batch) const {
  const auto& vars = model().variables();
  const int fields = model().num_fields();
  if (params.size() != vars.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", vars.size(), " variables but ", params.size(), " parameters were given"));
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    const bool table = static_cast<int>(i) < fields;
    const bool fits =
        params[i].dtype() == DType::kFloat32 &&
        (table ? params[i].rank() == 2 && params[i].dim(1) == vars[i].shape[1] : params[i].shape() == vars[i].shape);
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter ", vars[i].name, " has shape ", ShapeString(params[i].shape()), ", the model needs float32 ",
          table ? absl::StrCat("[rows pulled, ", vars[i].shape[1], "]") : ShapeString(vars[i].shape)));
    }
  }
  const int64_t n = batch.size();
  const int64_t numeric = model().layout().num_numeric;
  if (n > 0 && (batch.inputs.dtype() != DType::kFloat32 || batch.inputs.num_elements() != n * numeric)) {
    return absl::InvalidArgumentError(absl::StrCat("batch inputs of shape ", ShapeString(batch.inputs.shape()),
                                                   " do not fit the model's ", numeric, " numeric inputs"));
  }
  if (static_cast<int64_t>(batch.targets.size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat("batch has ", n, " examples but ", batch.targets.size(), " labels"));
  }
  if (static_cast<int64_t>(batch.positions.size()) != n * fields) {
    return absl::InvalidArgumentError(absl::StrCat("batch has ", batch.positions.size(), " id positions for ", n,
                                                   " examples of ", fields, " fields (was the lookup built?)"));
  }
  const std::vector<std::string>& combiners = model().combiners();
  std::vector<bool> is_bag(fields, false);
  if (batch.bag_positions.size() != batch.bags.size()) {
    return absl::InvalidArgumentError(absl::StrCat("batch has ", batch.bags.size(), " bags but positions for ",
                                                   batch.bag_positions.size(), " (was the lookup built?)"));
  }
  for (size_t k = 0; k < batch.bags.size(); ++k) {
    const IdBags& bag = batch.bags[k];
    const int f = bag.field;
    if (f < 0 || f >= fields || combiners[f].empty() || is_bag[f]) {
      return absl::InvalidArgumentError(absl::StrCat("batch bag ", k, " is of field ", f,
                                                     ", which is not a bag field of the model (or given twice)"));
    }
    is_bag[f] = true;
    if (static_cast<int64_t>(bag.offsets.size()) != n + 1 || bag.offsets[0] != 0 ||
        bag.offsets[n] != static_cast<int64_t>(bag.ids.size()) ||
        !std::is_sorted(bag.offsets.begin(), bag.offsets.end()) ||
        batch.bag_positions[k].size() != bag.ids.size() ||
        (!bag.weights.empty() && bag.weights.size() != bag.ids.size())) {
      return absl::InvalidArgumentError(absl::StrCat("the batch's bag of field ", f, " does not hold ", n,
                                                     " examples with a position (and weight) per id"));
    }
    for (int32_t p : batch.bag_positions[k]) {
      if (p < 0 || p >= params[f].dim(0)) {
        return absl::InvalidArgumentError(absl::StrCat("a bag id of field ", f, " refers to row ", p, " of the ",
                                                       params[f].dim(0), " rows pulled for ", vars[f].name));
      }
    }
  }
  for (int f = 0; f < fields; ++f) {
    if (!combiners[f].empty() && !is_bag[f]) {
      return absl::InvalidArgumentError(absl::StrCat("field ", f, " (", vars[f].name,
                                                     ") is a bag but the batch has no bag for it"));
    }
  }
  for (int64_t b = 0; b < n; ++b) {
    for (int f = 0; f < fields; ++f) {
      if (is_bag[f]) continue;
      const int32_t p = batch.positions[b * fields + f];
      if (p < 0 || p >= params[f].dim(0)) {
        return absl::InvalidArgumentError(absl::StrCat("example ", b, " field ", f, " refers to row ", p, " of the ",
                                                       params[f].dim(0), " rows pulled for ", vars[f].name));
      }
    }
  }
  return absl::OkStatus();
}

void CtrGradientComputer::PrepareGrads(absl::Span<const Tensor> params, std::vector<Tensor>* grads) {
  const size_t nv = params.size(), threads = replicas_.size();
  const size_t fields = static_cast<size_t>(model().num_fields());
  if (grads->size() != nv) grads->resize(nv);
  for (size_t i = 0; i < nv; ++i) {
    if ((*grads)[i].shape() != params[i].shape()) (*grads)[i] = Tensor(DType::kFloat32, params[i].shape());
  }
  if (replica_grads_.size() != threads) {
    replica_grads_.assign(threads, {});
    for (size_t t = 1; t < threads; ++t) {
      for (size_t i = 0; i < nv; ++i) {
        replica_grads_[t].emplace_back(DType::kFloat32, i < fields ? std::vector<int64_t>{0} : params[i].shape());
      }
    }
  }
  param_ptrs_.resize(nv);
  grad_ptrs_.assign(threads, std::vector<float*>(nv, nullptr));
  for (size_t i = 0; i < nv; ++i) {
    param_ptrs_[i] = params[i].data<float>();
    grad_ptrs_[0][i] = (*grads)[i].data<float>();
    for (size_t t = 1; t < threads && i >= fields; ++t) grad_ptrs_[t][i] = replica_grads_[t][i].data<float>();
  }
}

void CtrGradientComputer::SumTowerGrads(int chunks, std::vector<Tensor>* grads) {
  const size_t fields = static_cast<size_t>(model().num_fields());
  const CpuKernels& kernels = ActiveCpuKernels();
  for (int t = 1; t < chunks; ++t) {
    for (size_t i = fields; i < grads->size(); ++i) {
      kernels.add((*grads)[i].data<float>(), replica_grads_[t][i].data<float>(), (*grads)[i].num_elements());
    }
  }
}

const BagView* CtrGradientComputer::PrepareBags(const Batch& batch) {
  if (batch.bags.empty()) return nullptr;
  const int fields = model().num_fields();
  bag_views_.assign(fields, BagView{});
  coef_.resize(batch.bags.size());
  for (size_t k = 0; k < batch.bags.size(); ++k) {
    const IdBags& bag = batch.bags[k];
    BagCoefficients(model().combiners()[bag.field], bag.offsets.data(), bag.examples(),
                    bag.weights.empty() ? nullptr : bag.weights.data(), &coef_[k]);
    bag_views_[bag.field] = BagView{bag.offsets.data(), batch.bag_positions[k].data(), coef_[k].data()};
  }
  return bag_views_.data();
}

const BagView* CtrGradientComputer::ChunkBags(const BagView* bags, int t, int64_t begin) {
  if (bags == nullptr) return nullptr;
  std::vector<BagView>& views = chunk_bags_[t];
  views.assign(bags, bags + model().num_fields());
  for (BagView& v : views) {
    if (v.offsets != nullptr) v.offsets += begin;
  }
  return views.data();
}

absl::Status CtrGradientComputer::Compute(absl::Span<const Tensor> params, const Batch& batch, float loss_scale,
                                          std::vector<Tensor>* grads, BatchMetrics* metrics) {
  RETURN_IF_ERROR(Check(params, batch));
  PrepareGrads(params, grads);
  const int64_t n = batch.size();
  const int fields = model().num_fields();
  if (n == 0) {
    for (Tensor& g : *grads) std::fill(g.flat().begin(), g.flat().end(), 0.f);
    return absl::OkStatus();
  }
  const EmbeddingLayout& layout = model().layout();
  if (din_.size() < static_cast<size_t>(n * layout.width)) din_.resize(n * layout.width);
  replica_metrics_.assign(replicas_.size(), BatchMetrics{});
  const BagView* bags = PrepareBags(batch);
  chunk_bags_.resize(replicas_.size());
  const int chunks = pool_.RunChunks(n, [&](int t, int64_t begin, int64_t count) {
    replicas_[t]->Compute(param_ptrs_.data(), batch.inputs.data<float>() + begin * layout.num_numeric,
                          batch.positions.data() + begin * fields, ChunkBags(bags, t, begin),
                          batch.targets.data() + begin, count, loss_scale, grad_ptrs_[t].data(),
                          din_.data() + begin * layout.width, &replica_metrics_[t]);
  });
  // Tables: thread t owns fields t, t + chunks, ...; each adds the examples in batch order.
  pool_.Run(chunks, [&](int t) {
    for (int f = t; f < fields; f += chunks) {
      Tensor& g = (*grads)[f];
      std::fill(g.flat().begin(), g.flat().end(), 0.f);
      if (bags != nullptr && bags[f].offsets != nullptr) {
        ScatterAddBags(layout, f, din_.data(), bags[f], n, g.data<float>());
      } else {
        ScatterAddField(layout, f, din_.data(), batch.positions.data(), n, g.data<float>());
      }
    }
  });
  SumTowerGrads(chunks, grads);
  for (int t = 0; t < chunks; ++t) AddBatchMetrics(replica_metrics_[t], metrics);
  return absl::OkStatus();
}

absl::Status CtrGradientComputer::Evaluate(absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* metrics) {
  RETURN_IF_ERROR(Check(params, batch));
  param_ptrs_.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) param_ptrs_[i] = params[i].data<float>();
  replica_metrics_.assign(replicas_.size(), BatchMetrics{});
  const int64_t n = batch.size();
  if (n == 0) return absl::OkStatus();
  const int64_t numeric = model().layout().num_numeric;
  const int fields = model().num_fields();
  const BagView* bags = PrepareBags(batch);
  chunk_bags_.resize(replicas_.size());
  const int chunks = pool_.RunChunks(n, [&](int t, int64_t begin, int64_t count) {
    replicas_[t]->Evaluate(param_ptrs_.data(), batch.inputs.data<float>() + begin * numeric,
                           batch.positions.data() + begin * fields, ChunkBags(bags, t, begin),
                           batch.targets.data() + begin, count, &replica_metrics_[t]);
  });
  for (int t = 0; t < chunks; ++t) AddBatchMetrics(replica_metrics_[t], metrics);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<GradientComputer>> NewCpuCtrGradientComputer(const ModelSpec& model, int threads) {
  if (threads < 1) return absl::InvalidArgumentError(absl::StrCat("threads must be at least 1, got ", threads));
  std::vector<std::unique_ptr<CtrModel>> replicas;
  for (int t = 0; t < threads; ++t) {
    ASSIGN_OR_RETURN(auto m, CtrModel::Create(model));
    replicas.push_back(std::move(m));
  }
  return std::unique_ptr<GradientComputer>(new CtrGradientComputer(std::move(replicas)));
}

}  // namespace pstrain
