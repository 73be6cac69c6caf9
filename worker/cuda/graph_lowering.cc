#include "worker/cuda/graph_lowering.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/graph/model_graph.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

constexpr char kSupported[] =
    "the device runs chains of Conv2D (square kernel, stride 1, valid or same), MaxPooling2D (square window, "
    "stride = window, valid), Flatten, Dense on vectors and ReLU, with relu or linear activations; run with "
    "--device=cpu";

// `what`: the config that has no kernel, e.g. "with activation gelu"; empty for the whole class.
absl::Status Refuse(const GraphLayerSpec& layer, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("layer '", layer.name, "' (", layer.class_name, ")",
                                                 what.empty() ? "" : " ", what, " has no device kernel: ", kSupported));
}

// A softmax the device folds into its cross-entropy from logits: the model's output, probabilities.
bool SoftmaxIsTheLoss(ActivationKind activation, bool last, const ModelSpec& model) {
  return activation == ActivationKind::kSoftmax && last && model.loss == "sparse_categorical_crossentropy" &&
         !model.from_logits;
}

// relu or linear on a Dense / Conv2D; a softmax only as the model's output, folded into the loss.
absl::Status Activation(const GraphLayerSpec& layer, bool last, const ModelSpec& model, LayerSpec* out) {
  const ActivationKind activation = layer.config.activation;
  if (activation == ActivationKind::kRelu) {
    out->activation = "relu";
    return absl::OkStatus();
  }
  if (activation == ActivationKind::kLinear || SoftmaxIsTheLoss(activation, last, model)) {
    out->activation = "linear";
    return absl::OkStatus();
  }
  return Refuse(layer, absl::StrCat("with activation ", ActivationName(layer.config.activation)));
}

}  // namespace

absl::StatusOr<ModelSpec> LowerGraphForDevice(const ModelSpec& model) {
  const ModelGraph& graph = *model.graph;
  if (model.is_ctr() || graph.inputs.size() != 1) {
    return absl::InvalidArgumentError(
        "a Keras model with several or integer (id) inputs computes on the CPU only: run with --device=cpu");
  }
  ModelSpec out;
  out.input_shape = model.input_shape;
  out.loss = model.loss;
  int previous = graph.inputs[0];
  for (size_t i = 0; i < graph.layers.size(); ++i) {
    const GraphLayerSpec& layer = graph.layers[i];
    if (static_cast<int>(i) == graph.inputs[0]) continue;
    if (layer.inputs.size() != 1 || layer.inputs[0] != previous) {
      return absl::InvalidArgumentError(absl::StrCat("layer '", layer.name, "' (", layer.class_name,
                                                     ") takes another input than the layer before it: ", kSupported));
    }
    const bool last = static_cast<int>(i) == graph.output;
    const LayerConfig& c = layer.config;
    LayerSpec spec;
    spec.name = layer.name;
    spec.use_bias = c.use_bias;
    switch (layer.kind) {
      case LayerKind::kDense:
        if (graph.layers[previous].output_shape.size() != 1) return Refuse(layer, "on a non-vector input");
        spec.type = "dense";
        spec.units = c.units;
        RETURN_IF_ERROR(Activation(layer, last, model, &spec));
        break;
      case LayerKind::kConv2D:
        if (c.window_h != c.window_w || c.stride_h != 1 || c.stride_w != 1) {
          return Refuse(layer, "with a non-square kernel or a stride other than 1");
        }
        spec.type = "conv2d";
        spec.filters = c.filters;
        spec.kernel_size = c.window_h;
        spec.padding = c.same_padding ? "same" : "valid";
        RETURN_IF_ERROR(Activation(layer, last, model, &spec));
        break;
      case LayerKind::kMaxPooling2D:
        if (c.window_h != c.window_w || c.stride_h != c.window_h || c.stride_w != c.window_w || c.same_padding) {
          return Refuse(layer, "with a non-square window, a stride other than the window or same padding");
        }
        spec.type = "max_pool2d";
        spec.pool_size = c.window_h;
        break;
      case LayerKind::kFlatten: spec.type = "flatten"; break;
      case LayerKind::kReLU:
        if (c.max_value >= 0 || c.negative_slope != 0 || c.threshold != 0) {
          return Refuse(layer, "with max_value, negative_slope or threshold");
        }
        spec.type = "relu";
        break;
      case LayerKind::kActivation:
        if (c.activation == ActivationKind::kRelu) {
          spec.type = "relu";
        } else if (c.activation == ActivationKind::kLinear || SoftmaxIsTheLoss(c.activation, last, model)) {
          previous = static_cast<int>(i);  // nothing to run: the identity, or the loss's softmax
          continue;
        } else {
          return Refuse(layer, absl::StrCat("with activation ", ActivationName(c.activation)));
        }
        break;
      default: return Refuse(layer, "");
    }
    out.layers.push_back(std::move(spec));
    previous = static_cast<int>(i);
  }
  if (out.layers.empty()) return absl::InvalidArgumentError("the Keras model has no layer the device can run");
  return out;
}

}  // namespace pstrain
