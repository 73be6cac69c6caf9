#include "worker/graph/graph_executor.h"

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"

namespace pstrain {

template <typename T>
GraphExecutor<T>::GraphExecutor(const ModelGraph& graph) : graph_(graph) {
  const size_t n = graph_.layers.size();
  layer_variables_.resize(n);
  for (size_t v = 0; v < graph_.variables.size(); ++v) layer_variables_[graph_.variables[v].layer].push_back(v);
  for (size_t i = 0; i < n; ++i) layers_.push_back(MakeGraphLayer<T>(graph_, static_cast<int>(i)));
  values_.resize(n);
  weights_.resize(n);
  std::vector<int>& consumers = consumers_;
  consumers.assign(n, 0);
  for (const GraphLayerSpec& spec : graph_.layers) {
    for (int j : spec.inputs) ++consumers[j];
  }
  moves_.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const GraphLayerSpec& spec = graph_.layers[i];
    if (spec.kind == LayerKind::kInput || spec.inputs.size() != 1 || !layers_[i]->PassesThrough()) continue;
    const int j = spec.inputs[0];
    moves_[i] = consumers[j] == 1 && j != graph_.output && static_cast<int>(i) != graph_.output &&
                graph_.layers[j].kind != LayerKind::kInput;
  }
}

template <typename T>
absl::StatusOr<const Array<T>*> GraphExecutor<T>::Forward(const std::vector<Array<T>>& inputs,
                                                          const NamedArrays<T>& variables,
                                                          const ForwardOptions& options) {
  std::vector<Array<T>> copy = inputs;
  return Forward(&copy, variables, options);
}

template <typename T>
absl::StatusOr<const Array<T>*> GraphExecutor<T>::Forward(std::vector<Array<T>>* taken,
                                                          const NamedArrays<T>& variables,
                                                          const ForwardOptions& options) {
  std::vector<Array<T>>& inputs = *taken;
  forward_done_ = false;
  backward_ready_ = false;
  if (inputs.size() != graph_.inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model takes ", graph_.inputs.size(), " inputs, got ", inputs.size()));
  }
  const int64_t batch = inputs.empty() || inputs[0].shape.empty() ? 0 : inputs[0].shape[0];
  if (batch <= 0) return absl::InvalidArgumentError("the batch is empty");
  for (size_t k = 0; k < inputs.size(); ++k) {
    const GraphLayerSpec& spec = graph_.layers[graph_.inputs[k]];
    std::vector<int64_t> want = {batch};
    want.insert(want.end(), spec.output_shape.begin(), spec.output_shape.end());
    if (inputs[k].shape != want || inputs[k].size() != Array<T>::Count(want)) {
      return absl::InvalidArgumentError(absl::StrCat("input '", spec.name, "' has shape ", ShapeString(inputs[k].shape),
                                                     "; expected ", ShapeString(want)));
    }
  }
  for (size_t k = 0; k < inputs.size(); ++k) {  // checked all first: a refused call takes nothing
    Array<T>& value = values_[graph_.inputs[k]];
    value.shape = inputs[k].shape;
    value.data.swap(inputs[k].data);
  }
  for (size_t i = 0; i < graph_.layers.size(); ++i) {
    const GraphLayerSpec& spec = graph_.layers[i];
    weights_[i].clear();
    for (int v : layer_variables_[i]) {
      const GraphVariableSpec& var = graph_.variables[v];
      auto it = variables.find(var.name);
      if (it == variables.end()) return absl::InvalidArgumentError(absl::StrCat("variable '", var.name, "' is missing"));
      // An Embedding's table may come as any number of rows: the rows a batch touches, its ids
      // then positions among them (the sparse ps path).
      const bool rows = spec.kind == LayerKind::kEmbedding && it->second.shape.size() == 2 &&
                        it->second.shape[0] > 0 && it->second.shape[1] == var.shape[1];
      if ((!rows && it->second.shape != var.shape) || it->second.size() != Array<T>::Count(it->second.shape)) {
        return absl::InvalidArgumentError(absl::StrCat("variable '", var.name, "' has shape ",
                                                       ShapeString(it->second.shape), "; expected ",
                                                       ShapeString(var.shape)));
      }
      weights_[i].push_back(&it->second);
    }
    if (spec.kind == LayerKind::kInput) continue;
    if (moves_[i]) {
      values_[i].shape = {batch};
      values_[i].shape.insert(values_[i].shape.end(), spec.output_shape.begin(), spec.output_shape.end());
      values_[i].data.swap(values_[spec.inputs[0]].data);
      continue;
    }
    std::vector<const Array<T>*> in;
    for (int j : spec.inputs) in.push_back(&values_[j]);
    RETURN_IF_ERROR(layers_[i]->Forward(in, weights_[i], options, &values_[i]));
  }
  forward_done_ = true;
  backward_ready_ = true;
  return &values_[graph_.output];
}

template <typename T>
absl::Status GraphExecutor<T>::Backward(const Array<T>& doutput, NamedArrays<T>* gradients) {
  if (!backward_ready_) return absl::FailedPreconditionError("Backward needs a successful Forward first");
  if (doutput.shape != values_[graph_.output].shape) {
    return absl::InvalidArgumentError(absl::StrCat("the output gradient has shape ", ShapeString(doutput.shape),
                                                   "; the output is ", ShapeString(values_[graph_.output].shape)));
  }
  const size_t n = graph_.layers.size();
  // Which layers need an input gradient: those on a path from a variable to the output.
  std::vector<bool> needs(n, false);
  for (size_t i = 0; i < n; ++i) {
    bool trainable = false;
    for (int v : layer_variables_[i]) trainable |= graph_.variables[v].trainable;
    for (int j : graph_.layers[i].inputs) trainable |= needs[j];
    needs[i] = trainable;
  }
  // The per-layer gradients keep their storage across calls; an empty shape marks "none yet".
  std::vector<Array<T>>& grads = grads_;
  grads.resize(n);
  for (Array<T>& g : grads) g.shape.clear();
  grads[graph_.output] = doutput;
  for (size_t i = n; i-- > 0;) {
    const GraphLayerSpec& spec = graph_.layers[i];
    if (moves_[i]) {  // the values go back to the input, and the gradient with them
      const int j = spec.inputs[0];
      values_[j].data.swap(values_[i].data);
      if (needs[j] && !grads[i].shape.empty()) {
        grads[j].shape = values_[j].shape;
        grads[j].data.swap(grads[i].data);
      }
      continue;
    }
    if (spec.kind == LayerKind::kInput || grads[i].shape.empty()) continue;  // no gradient reaches it
    // A layer that writes its gradients gets its input's own array when it is that input's only
    // consumer, else scratch added afterwards; the others add to zero-filled arrays.
    const bool writes = layers_[i]->WritesGradients();
    std::vector<const Array<T>*> in;
    std::vector<Array<T>*> din;
    if (scratch_.size() < spec.inputs.size()) scratch_.resize(spec.inputs.size());
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      const int j = spec.inputs[k];
      in.push_back(&values_[j]);
      if (!needs[j]) {
        din.push_back(nullptr);
      } else if (writes && consumers_[j] == 1) {
        grads[j].Resize(values_[j].shape);
        din.push_back(&grads[j]);
      } else if (writes) {
        scratch_[k].Resize(values_[j].shape);
        din.push_back(&scratch_[k]);
      } else {
        if (grads[j].shape.empty()) grads[j].Reset(values_[j].shape);
        din.push_back(&grads[j]);
      }
    }
    std::vector<Array<T>*> dweights;
    for (int v : layer_variables_[i]) {
      const GraphVariableSpec& var = graph_.variables[v];
      if (!var.trainable) {
        dweights.push_back(nullptr);
        continue;
      }
      Array<T>& g = (*gradients)[var.name];
      const std::vector<int64_t>& shape = weights_[i][dweights.size()]->shape;  // var.shape but for table rows
      if (layers_[i]->WritesGradients()) {
        g.Resize(shape);
      } else {
        g.Reset(shape);
      }
      dweights.push_back(&g);
    }
    layers_[i]->BackwardOnOwnGradient(in, weights_[i], values_[i], &grads[i], din, dweights);  // grads[i] is done after
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      if (din[k] != &scratch_[k]) continue;
      Array<T>& g = grads[spec.inputs[k]];
      if (g.shape.empty()) g.Reset(values_[spec.inputs[k]].shape);
      AddTo(scratch_[k].data.data(), g.size(), g.data.data());
    }
  }
  backward_ready_ = false;  // the moved values are back with their inputs
  return absl::OkStatus();
}

template <typename T>
NamedArrays<T> GraphExecutor<T>::MovingUpdates() const {
  NamedArrays<T> updates;
  if (!forward_done_) return updates;
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (graph_.layers[i].kind == LayerKind::kInput) continue;
    for (auto& [index, value] : layers_[i]->MovingUpdates(weights_[i])) {
      updates[graph_.variables[layer_variables_[i][index]].name] = std::move(value);
    }
  }
  return updates;
}

template class GraphExecutor<float>;
template class GraphExecutor<double>;

}  // namespace pstrain
