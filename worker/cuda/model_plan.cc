#include "worker/cuda/model_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"

namespace pstrain {
namespace {

absl::Status PlanError(size_t i, const LayerSpec& layer, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("device model: model.layers[", i, "] (", layer.type, " \"", layer.name, "\"): ", why));
}

absl::StatusOr<DeviceLayerKind> KindOf(size_t i, const LayerSpec& layer) {
  if (layer.type == "dense") return DeviceLayerKind::kDense;
  if (layer.type == "conv2d") return DeviceLayerKind::kConv2D;
  if (layer.type == "max_pool2d") return DeviceLayerKind::kMaxPool;
  if (layer.type == "flatten") return DeviceLayerKind::kFlatten;
  if (layer.type == "relu") return DeviceLayerKind::kRelu;
  return PlanError(i, layer, "unknown layer type; supported: dense, conv2d, max_pool2d, flatten, relu");
}

absl::Status FillLayer(size_t i, const LayerSpec& spec, LayerPlan* layer) {
  ASSIGN_OR_RETURN(layer->kind, KindOf(i, spec));
  layer->name = spec.name;
  layer->in_size = NumElements(layer->in_shape);
  layer->out_size = NumElements(layer->out_shape);
  if (layer->kind == DeviceLayerKind::kDense || layer->kind == DeviceLayerKind::kConv2D) {
    if (spec.activation == "relu") {
      layer->relu = true;
    } else if (!spec.activation.empty() && spec.activation != "linear") {
      return PlanError(i, spec,
                       absl::StrCat("activation \"", spec.activation, "\" is not supported (use relu or linear)"));
    }
  }
  if (layer->kind == DeviceLayerKind::kRelu) layer->relu = true;
  if (layer->kind == DeviceLayerKind::kConv2D) {
    if (spec.padding != "same" && spec.padding != "valid") {
      return PlanError(i, spec, absl::StrCat("padding \"", spec.padding, "\" must be same or valid"));
    }
    layer->kernel_size = static_cast<int>(spec.kernel_size);
    if (spec.padding == "same") {
      layer->pad_top = layer->pad_left = static_cast<int>((spec.kernel_size - 1) / 2);  // TensorFlow: floor half
    }
  }
  if (layer->kind == DeviceLayerKind::kMaxPool) layer->pool_size = static_cast<int>(spec.pool_size);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelPlan> PlanModel(const ModelSpec& model) {
  ModelPlan plan;
  if (model.loss == "mse") {
    plan.softmax_xent = false;
  } else if (model.loss != "sparse_categorical_crossentropy") {
    return absl::InvalidArgumentError(absl::StrCat("device model: loss \"", model.loss,
                                                   "\" is not supported (sparse_categorical_crossentropy or mse)"));
  }
  if (model.layers.empty()) return absl::InvalidArgumentError("device model: the model has no layers");
  ASSIGN_OR_RETURN(auto outputs, LayerOutputShapes(model));
  ASSIGN_OR_RETURN(plan.variables, ModelVariables(model));
  plan.input_size = NumElements(model.input_shape);
  plan.max_activation = plan.input_size;
  int next_param = 0;
  std::vector<int64_t> in = model.input_shape;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    LayerPlan layer;
    layer.in_shape = in;
    layer.out_shape = outputs[i];
    RETURN_IF_ERROR(FillLayer(i, model.layers[i], &layer));
    if (layer.kind == DeviceLayerKind::kDense || layer.kind == DeviceLayerKind::kConv2D) {
      layer.kernel_param = next_param++;
      if (model.layers[i].use_bias) layer.bias_param = next_param++;
      if (plan.first_trainable < 0) plan.first_trainable = static_cast<int>(i);
    }
    plan.max_activation = std::max(plan.max_activation, layer.out_size);
    in = outputs[i];
    plan.layers.push_back(std::move(layer));
  }
  if (next_param != static_cast<int>(plan.variables.size())) {
    return absl::InternalError("device model: parameter count disagrees with ModelVariables()");
  }
  for (const VariableSpec& v : plan.variables) {
    plan.param_offsets.push_back(plan.param_total);
    plan.param_total += NumElements(v.shape);
  }
  plan.outputs = plan.layers.back().out_size;
  if (plan.softmax_xent && plan.layers.back().out_shape.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("device model: sparse_categorical_crossentropy needs flat logits, but ", "the last layer outputs ",
                     ShapeString(plan.layers.back().out_shape), "; add flatten and dense layers"));
  }
  return plan;
}

ConvGeometry ModelPlan::Conv(int layer, int batch) const {
  const LayerPlan& l = layers[layer];
  ConvGeometry g;
  g.batch = batch;
  g.in_h = static_cast<int>(l.in_shape[0]);
  g.in_w = static_cast<int>(l.in_shape[1]);
  g.in_c = static_cast<int>(l.in_shape[2]);
  g.out_h = static_cast<int>(l.out_shape[0]);
  g.out_w = static_cast<int>(l.out_shape[1]);
  g.out_c = static_cast<int>(l.out_shape[2]);
  g.k = l.kernel_size;
  g.pad_top = l.pad_top;
  g.pad_left = l.pad_left;
  return g;
}

PoolGeometry ModelPlan::Pool(int layer, int batch) const {
  const LayerPlan& l = layers[layer];
  PoolGeometry g;
  g.batch = batch;
  g.in_h = static_cast<int>(l.in_shape[0]);
  g.in_w = static_cast<int>(l.in_shape[1]);
  g.c = static_cast<int>(l.in_shape[2]);
  g.out_h = static_cast<int>(l.out_shape[0]);
  g.out_w = static_cast<int>(l.out_shape[1]);
  g.p = l.pool_size;
  return g;
}

int64_t ModelPlan::MaxColSize(int64_t batch) const {
  int64_t best = 0;
  for (const LayerPlan& l : layers) {
    if (l.kind != DeviceLayerKind::kConv2D) continue;
    best = std::max(best, batch * l.out_shape[0] * l.out_shape[1] * l.kernel_size * l.kernel_size * l.in_shape[2]);
  }
  return best;
}

int64_t ModelPlan::MaxConvRows(int64_t batch) const {
  int64_t best = 0;
  for (const LayerPlan& l : layers) {
    if (l.kind == DeviceLayerKind::kConv2D) best = std::max(best, batch * l.out_shape[0] * l.out_shape[1]);
  }
  return best;
}

}  // namespace pstrain
