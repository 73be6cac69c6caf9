#include "worker/cpu/ctr_model.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "worker/cpu/sigmoid_cross_entropy.h"

namespace pstrain {

absl::StatusOr<std::unique_ptr<CtrModel>> CtrModel::Create(const ModelSpec& spec) {
  if (!spec.is_ctr()) return absl::InvalidArgumentError("CtrModel needs a CTR model (model.fields)");
  std::unique_ptr<CtrModel> m(new CtrModel());
  ASSIGN_OR_RETURN(m->variables_, ModelVariables(spec));
  std::vector<int64_t> dims;
  for (const EmbeddingFieldSpec& f : spec.fields) {
    dims.push_back(f.embedding_dim);
    if (!f.combiner.empty() && f.combiner != "sum" && f.combiner != "mean" && f.combiner != "sqrtn") {
      return absl::InvalidArgumentError(absl::StrCat("field ", f.name, " has combiner \"", f.combiner,
                                                     "\"; want sum, mean or sqrtn"));
    }
    m->combiners_.push_back(f.combiner);
  }
  m->layout_ = MakeEmbeddingLayout(spec.numeric_inputs, std::move(dims));
  int64_t in = m->layout_.width;
  int param = m->num_fields();
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& l = spec.layers[i];
    if (l.type != "dense") {
      return absl::InvalidArgumentError(
          absl::StrCat("job spec: model.layers[", i, "] is ", l.type, ": a CTR model's layers must all be dense"));
    }
    m->tower_.emplace_back(DenseGeometry{in, l.units, l.activation == "relu", l.use_bias});
    m->first_param_.push_back(param);
    param += l.use_bias ? 2 : 1;
    in = l.units;
  }
  m->activations_.resize(spec.layers.size() + 1);
  m->table_rows_.resize(m->num_fields());
  return m;
}

const float* CtrModel::Forward(const float* const* params, const float* numeric, const int32_t* positions,
                               const BagView* bags, int64_t batch) {
  for (int f = 0; f < num_fields(); ++f) {
    table_rows_[f] = bags != nullptr && bags[f].offsets != nullptr ? nullptr : params[f];
  }
  std::vector<float>& x = activations_[0];
  if (x.size() < static_cast<size_t>(batch * layout_.width)) x.resize(batch * layout_.width);
  GatherConcat(layout_, numeric, table_rows_, positions, batch, x.data());
  for (int f = 0; bags != nullptr && f < num_fields(); ++f) {
    if (bags[f].offsets != nullptr) CombineBags(layout_, f, params[f], bags[f], batch, x.data());
  }
  for (size_t l = 0; l < tower_.size(); ++l) {
    const DenseGeometry& g = tower_[l].geometry();
    std::vector<float>& out = activations_[l + 1];
    if (out.size() < static_cast<size_t>(batch * g.units)) out.resize(batch * g.units);
    const float* const* p = params + first_param_[l];
    tower_[l].Forward(activations_[l].data(), batch, p[0], g.bias ? p[1] : nullptr, out.data());
  }
  return activations_.back().data();
}

void CtrModel::AddMetrics(const float* logits, const float* labels, int64_t batch, float loss_scale, bool want_grad,
                          BatchMetrics* metrics) {
  if (grad_a_.size() < static_cast<size_t>(batch)) grad_a_.resize(batch);
  int64_t correct = 0;
  metrics->loss_sum +=
      SigmoidCrossEntropy(logits, labels, batch, loss_scale, want_grad ? grad_a_.data() : nullptr, &correct);
  metrics->correct += correct;
  metrics->examples += batch;
  metrics->logits.insert(metrics->logits.end(), logits, logits + batch);
  metrics->labels.insert(metrics->labels.end(), labels, labels + batch);
}

void CtrModel::Compute(const float* const* params, const float* numeric, const int32_t* positions, const BagView* bags,
                       const float* labels, int64_t batch, float loss_scale, float* const* grads, float* din,
                       BatchMetrics* metrics) {
  const float* logits = Forward(params, numeric, positions, bags, batch);
  AddMetrics(logits, labels, batch, loss_scale, /*want_grad=*/true, metrics);
  size_t largest = 0;
  for (const Dense& d : tower_) largest = std::max(largest, static_cast<size_t>(batch * d.geometry().units));
  if (grad_a_.size() < largest) grad_a_.resize(largest);
  if (grad_b_.size() < largest) grad_b_.resize(largest);
  float* dout = grad_a_.data();
  float* spare = grad_b_.data();
  for (size_t l = tower_.size(); l-- > 0;) {
    const DenseGeometry& g = tower_[l].geometry();
    const float* const* p = params + first_param_[l];
    float* const* g_out = grads + first_param_[l];
    float* layer_din = l == 0 ? din : spare;
    tower_[l].Backward(activations_[l].data(), activations_[l + 1].data(), dout, batch, p[0], layer_din, g_out[0],
                       g.bias ? g_out[1] : nullptr);
    std::swap(dout, spare);
  }
}

void CtrModel::Evaluate(const float* const* params, const float* numeric, const int32_t* positions,
                        const BagView* bags, const float* labels, int64_t batch, BatchMetrics* metrics) {
  const float* logits = Forward(params, numeric, positions, bags, batch);
  AddMetrics(logits, labels, batch, 0.f, /*want_grad=*/false, metrics);
}

}  // namespace pstrain
