#include "common/graph/onnx_export.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/graph/onnx_graph_builder.h"
#include "common/platform/status_macros.h"
#include "proto/onnx.pb.h"

namespace pstrain {
namespace {

using Attr = OnnxGraphBuilder::Attr;

// protobuf cannot write a message of 2 GiB or more; leave room for the graph around the weights.
constexpr int64_t kMaxWeightBytes = (int64_t{1} << 31) - (int64_t{64} << 20);

std::string ShapeString(const std::vector<int64_t>& s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); }

// Emits the nodes of one layer at a time; values[i] names layer i's output.
class LayerEmitter {
 public:
  LayerEmitter(const ModelGraph& graph, const FloatTensorMap& weights, onnx::GraphProto* proto)
      : graph_(graph), weights_(weights), b_(proto), values_(graph.layers.size()), is_int_(graph.layers.size()) {
    layer_vars_.resize(graph.layers.size());
    for (const GraphVariableSpec& v : graph.variables) layer_vars_[v.layer].push_back(v.name);
  }

  absl::Status Emit(int index) {
    const GraphLayerSpec& l = graph_.layers[index];
    b_.SetPrefix(l.name);
    if (l.kind == LayerKind::kInput) {
      values_[index] = l.name;
      is_int_[index] = l.config.int_input;
      return absl::OkStatus();
    }
    std::vector<std::string> in;
    for (int i : l.inputs) in.push_back(l.kind == LayerKind::kEmbedding ? AsInt64(i) : AsFloat(i));
    ASSIGN_OR_RETURN(const std::string out, Layer(l, in));
    b_.Finish(out, l.name);
    values_[index] = l.name;
    return absl::OkStatus();
  }

  bool IsInt(int index) const { return is_int_[index]; }

 private:
  std::string AsFloat(int i) {
    return is_int_[i] ? b_.Node("Cast", {values_[i]}, {Attr::Int("to", onnx::TensorProto::FLOAT)}) : values_[i];
  }
  std::string AsInt64(int i) {
    return is_int_[i] ? values_[i] : b_.Node("Cast", {values_[i]}, {Attr::Int("to", onnx::TensorProto::INT64)});
  }

  // The layer's k-th variable (ModelGraph order, as the executor takes them) as an initializer.
  std::string Var(const GraphLayerSpec& l, size_t k) {
    const std::string& name = layer_vars_[&l - graph_.layers.data()][k];
    const FloatTensor& t = weights_.at(name);  // checked by CheckWeights
    b_.Initializer(name, t.shape, t.values);
    return name;
  }

  std::string Activation(ActivationKind kind, const std::string& x) {
    switch (kind) {
      case ActivationKind::kLinear: return x;
      case ActivationKind::kRelu: return b_.Node("Relu", {x});
      case ActivationKind::kSigmoid: return b_.Node("Sigmoid", {x});
      case ActivationKind::kTanh: return b_.Node("Tanh", {x});
      case ActivationKind::kSoftmax: return b_.Node("Softmax", {x}, {Attr::Int("axis", -1)});
      case ActivationKind::kElu: return b_.Node("Elu", {x}, {Attr::Float("alpha", 1.0f)});
      case ActivationKind::kSilu: return b_.Node("Mul", {x, b_.Node("Sigmoid", {x})});
      case ActivationKind::kGelu: {  // the exact form: 0.5 x (1 + erf(x / sqrt(2))); Gelu is opset 20
        const std::string erf = b_.Node("Erf", {b_.Node("Div", {x, b_.FloatScalar(std::sqrt(2.0f))})});
        const std::string one_plus = b_.Node("Add", {erf, b_.FloatScalar(1.0f)});
        return b_.Node("Mul", {b_.Node("Mul", {x, b_.FloatScalar(0.5f)}), one_plus});
      }
    }
    return x;
  }

  // x * W (+ b) on the last axis.
  std::string Affine(const std::string& x, const std::string& kernel, const std::string& bias) {
    const std::string y = b_.Node("MatMul", {x, kernel});
    return bias.empty() ? y : b_.Node("Add", {y, bias});
  }

  // NHWC -> NCHW, `op` with the layer's window, strides and TensorFlow's "same" padding, back to NHWC.
  std::string Spatial(const GraphLayerSpec& l, const std::string& x, const std::string& op,
                      std::vector<std::string> extra, std::vector<Attr> attrs) {
    const LayerConfig& c = l.config;
    const std::vector<int64_t>& in = graph_.layers[l.inputs[0]].output_shape;  // [h, w, channels]
    const std::vector<int64_t>& out = l.output_shape;
    const int64_t pad_h = c.same_padding ? std::max<int64_t>((out[0] - 1) * c.stride_h + c.window_h - in[0], 0) : 0;
    const int64_t pad_w = c.same_padding ? std::max<int64_t>((out[1] - 1) * c.stride_w + c.window_w - in[1], 0) : 0;
    // The extra row / column of an odd total goes to the bottom / right, as TensorFlow pads.
    attrs.push_back(Attr::Ints("pads", {pad_h / 2, pad_w / 2, pad_h - pad_h / 2, pad_w - pad_w / 2}));
    attrs.push_back(Attr::Ints("kernel_shape", {c.window_h, c.window_w}));
    attrs.push_back(Attr::Ints("strides", {c.stride_h, c.stride_w}));
    std::vector<std::string> inputs = {b_.Node("Transpose", {x}, {Attr::Ints("perm", {0, 3, 1, 2})})};
    inputs.insert(inputs.end(), extra.begin(), extra.end());
    const std::string y = b_.Node(op, inputs, attrs);
    return b_.Node("Transpose", {y}, {Attr::Ints("perm", {0, 2, 3, 1})});
  }

  // [0] + shape: the batch kept, the rest as given.
  std::string Reshape(const std::string& x, const std::vector<int64_t>& shape) {
    std::vector<int64_t> s = {0};
    s.insert(s.end(), shape.begin(), shape.end());
    return b_.Node("Reshape", {x, b_.Int64Const(s)});
  }

  absl::StatusOr<std::string> Layer(const GraphLayerSpec& l, const std::vector<std::string>& in) {
    const LayerConfig& c = l.config;
    const int rank = static_cast<int>(graph_.layers[l.inputs[0]].output_shape.size()) + 1;  // with the batch
    switch (l.kind) {
      case LayerKind::kInput: break;
      case LayerKind::kDense:
        return Activation(c.activation, Affine(in[0], Var(l, 0), c.use_bias ? Var(l, 1) : ""));
      case LayerKind::kActivation: return Activation(c.activation, in[0]);
      case LayerKind::kReLU: return Relu(c, in[0]);
      case LayerKind::kFlatten:
      case LayerKind::kReshape:
        // Row-major over the NHWC values, as Keras flattens.
        return Reshape(in[0], l.output_shape);
      case LayerKind::kDropout: return in[0];  // inference
      case LayerKind::kConcatenate: return b_.Node("Concat", in, {Attr::Int("axis", c.axis + 1)});
      case LayerKind::kAdd:
      case LayerKind::kSubtract:
      case LayerKind::kMultiply:
      case LayerKind::kAverage: {
        const char* op = l.kind == LayerKind::kSubtract ? "Sub" : l.kind == LayerKind::kMultiply ? "Mul" : "Add";
        std::string acc = in[0];
        for (size_t i = 1; i < in.size(); ++i) acc = b_.Node(op, {acc, in[i]});  // in the executor's order
        if (l.kind == LayerKind::kAverage) acc = b_.Node("Div", {acc, b_.FloatScalar(static_cast<float>(in.size()))});
        return acc;
      }
      case LayerKind::kDot: {
        std::string x = in[0], y = in[1];
        if (c.normalize) {
          x = L2Normalize(x);
          y = L2Normalize(y);
        }
        return b_.Node("ReduceSum", {b_.Node("Mul", {x, y}), b_.Int64Const({-1})}, {Attr::Int("keepdims", 1)});
      }
      case LayerKind::kEmbedding: return b_.Node("Gather", {Var(l, 0), in[0]}, {Attr::Int("axis", 0)});
      case LayerKind::kLayerNormalization: {
        const int64_t d = l.output_shape.back();
        size_t k = 0;
        const std::string gamma = c.scale ? Var(l, k++) : b_.FloatConst({d}, std::vector<float>(d, 1.0f));
        std::vector<std::string> inputs = {in[0], gamma};
        if (c.center) inputs.push_back(Var(l, k++));
        return b_.Node("LayerNormalization", inputs,
                       {Attr::Int("axis", -1), Attr::Float("epsilon", static_cast<float>(c.epsilon))});
      }
      case LayerKind::kBatchNormalization: {
        // (x - moving_mean) / sqrt(moving_variance + epsilon) * gamma + beta on the last axis, as the
        // executor computes it (ONNX's BatchNormalization wants the channels on axis 1).
        size_t k = 0;
        const std::string gamma = c.scale ? Var(l, k++) : "";
        const std::string beta = c.center ? Var(l, k++) : "";
        const std::string mean = Var(l, k++), var = Var(l, k++);
        const std::string inv_std = b_.Node(
            "Reciprocal",
            {b_.Node("Sqrt", {b_.Node("Add", {var, b_.FloatScalar(static_cast<float>(c.epsilon))})})});
        std::string y = b_.Node("Mul", {b_.Node("Sub", {in[0], mean}), inv_std});
        if (!gamma.empty()) y = b_.Node("Mul", {y, gamma});
        if (!beta.empty()) y = b_.Node("Add", {y, beta});
        return y;
      }
      case LayerKind::kGlobalAveragePooling1D:
      case LayerKind::kGlobalAveragePooling2D:
      case LayerKind::kGlobalMaxPooling1D:
      case LayerKind::kGlobalMaxPooling2D: {
        std::vector<int64_t> axes;  // every axis between the batch and the channels
        for (int a = 1; a < rank - 1; ++a) axes.push_back(a);
        const bool max = l.kind == LayerKind::kGlobalMaxPooling1D || l.kind == LayerKind::kGlobalMaxPooling2D;
        return b_.Node(max ? "ReduceMax" : "ReduceMean", {in[0]},
                       {Attr::Ints("axes", axes), Attr::Int("keepdims", c.keepdims ? 1 : 0)});
      }
      case LayerKind::kCross: return Cross(l, in);
      case LayerKind::kDotInteraction: return DotInteraction(l, in);
      case LayerKind::kConv2D: {
        // Keras's kernel [kh, kw, in, filters] -> ONNX's [filters, in, kh, kw].
        std::vector<std::string> extra = {b_.Node("Transpose", {Var(l, 0)}, {Attr::Ints("perm", {3, 2, 0, 1})})};
        if (c.use_bias) extra.push_back(Var(l, 1));
        return Activation(c.activation, Spatial(l, in[0], "Conv", extra, {}));
      }
      case LayerKind::kMaxPooling2D: return Spatial(l, in[0], "MaxPool", {}, {});
      case LayerKind::kAveragePooling2D:
        // Keras's "same" average ignores the padded positions.
        return Spatial(l, in[0], "AveragePool", {}, {Attr::Int("count_include_pad", 0)});
    }
    return absl::InvalidArgumentError(
        absl::StrCat("layer '", l.name, "' (", l.class_name, ") cannot be exported to ONNX"));
  }

  // Keras's ReLU: x above threshold passes (clipped to [0, max_value] when set), below it
  // negative_slope * (x - threshold).
  std::string Relu(const LayerConfig& c, const std::string& x) {
    if (c.threshold == 0.0 && c.negative_slope == 0.0 && c.max_value < 0) return b_.Node("Relu", {x});
    const std::string t = b_.FloatScalar(static_cast<float>(c.threshold));
    const std::string above =
        c.max_value >= 0
            ? b_.Node("Clip", {x, b_.FloatScalar(0.0f), b_.FloatScalar(static_cast<float>(c.max_value))})
            : x;
    const std::string slope = b_.FloatScalar(static_cast<float>(c.negative_slope));
    const std::string below = b_.Node("Mul", {slope, b_.Node("Sub", {x, t})});
    return b_.Node("Where", {b_.Node("Greater", {x, t}), above, below});
  }

  // x / sqrt(max(|x|^2, 1e-12)) over the last axis.
  std::string L2Normalize(const std::string& x) {
    const std::string sq = b_.Node("ReduceSumSquare", {x}, {Attr::Ints("axes", {-1}), Attr::Int("keepdims", 1)});
    return b_.Node("Div", {x, b_.Node("Sqrt", {b_.Node("Max", {sq, b_.FloatScalar(1e-12f)})})});
  }

  // DCN-v2: x0 * (act(W x + b) + diag_scale * x) + x, W full or U then V.
  std::string Cross(const GraphLayerSpec& l, const std::vector<std::string>& in) {
    const LayerConfig& c = l.config;
    const std::string& x0 = in[0];
    const std::string& x = in.back();
    std::string pre;
    if (c.projection_dim == 0) {
      pre = Affine(x, Var(l, 0), c.use_bias ? Var(l, 1) : "");
    } else {
      pre = Affine(Affine(x, Var(l, 0), ""), Var(l, 1), c.use_bias ? Var(l, 2) : "");
    }
    std::string prod = Activation(c.activation, pre);
    if (c.diag_scale != 0.0) {
      prod = b_.Node("Add", {prod, b_.Node("Mul", {x, b_.FloatScalar(static_cast<float>(c.diag_scale))})});
    }
    return b_.Node("Add", {b_.Node("Mul", {x0, prod}), x});
  }

  // DLRM's interaction: the F x F dot products of the inputs [batch, d], kept at row i, column j < i
  // (j <= i with self_interaction) in row-major order; with skip_gather all F * F, the others zero.
  std::string DotInteraction(const GraphLayerSpec& l, const std::vector<std::string>& in) {
    const LayerConfig& c = l.config;
    const int64_t f = static_cast<int64_t>(in.size()), d = graph_.layers[l.inputs[0]].output_shape[0];
    const std::string stacked = Reshape(b_.Node("Concat", in, {Attr::Int("axis", 1)}), {f, d});  // [batch, F, d]
    const std::string gram =
        b_.Node("MatMul", {stacked, b_.Node("Transpose", {stacked}, {Attr::Ints("perm", {0, 2, 1})})});
    const std::string flat = Reshape(gram, {f * f});
    std::vector<int64_t> kept;
    std::vector<float> mask(f * f, 0.0f);
    for (int64_t i = 0; i < f; ++i) {
      for (int64_t j = 0; j < f; ++j) {
        if (c.self_interaction ? j <= i : j < i) {
          kept.push_back(i * f + j);
          mask[i * f + j] = 1.0f;
        }
      }
    }
    if (c.skip_gather) return b_.Node("Mul", {flat, b_.FloatConst({f * f}, mask)});
    return b_.Node("Gather", {flat, b_.Int64Const(kept)}, {Attr::Int("axis", 1)});
  }

  const ModelGraph& graph_;
  const FloatTensorMap& weights_;
  OnnxGraphBuilder b_;
  std::vector<std::vector<std::string>> layer_vars_;  // per layer: its variables' names in order
  std::vector<std::string> values_;
  std::vector<bool> is_int_;
};

absl::Status CheckWeights(const ModelGraph& graph, const FloatTensorMap& weights) {
  int64_t bytes = 0;
  for (const GraphVariableSpec& v : graph.variables) {
    auto it = weights.find(v.name);
    if (it == weights.end()) {
      return absl::InvalidArgumentError(absl::StrCat("ONNX export of model '", graph.name, "': variable '", v.name,
                                                     "' (shape ", ShapeString(v.shape), ") has no value"));
    }
    int64_t count = 1;
    for (int64_t d : v.shape) count *= d;
    if (it->second.shape != v.shape || static_cast<int64_t>(it->second.values.size()) != count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ONNX export of model '", graph.name, "': variable '", v.name, "' has shape ",
          ShapeString(it->second.shape), " with ", it->second.values.size(), " values; the model needs shape ",
          ShapeString(v.shape), " (", count, " values)"));
    }
    bytes += count * static_cast<int64_t>(sizeof(float));
  }
  if (bytes > kMaxWeightBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ONNX export of model '", graph.name, "': the weights take ", bytes,
        " bytes, more than one ONNX file without external data can hold (2 GiB); export a smaller model"));
  }
  return absl::OkStatus();
}

void SetValueInfo(const std::string& name, bool is_int, const std::vector<int64_t>& per_example,
                  onnx::ValueInfoProto* info) {
  info->set_name(name);
  onnx::TypeProto::Tensor* t = info->mutable_type()->mutable_tensor_type();
  t->set_elem_type(is_int ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
  onnx::TensorShapeProto* shape = t->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  for (int64_t d : per_example) shape->add_dim()->set_dim_value(d);
}

}  // namespace

absl::StatusOr<std::string> ExportOnnx(const ModelGraph& graph, const FloatTensorMap& weights,
                                       const OnnxExportOptions& options) {
  RETURN_IF_ERROR(CheckWeights(graph, weights));
  onnx::ModelProto model;
  model.set_ir_version(kOnnxIrVersion);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  model.set_producer_name("pstrain");
  if (!options.producer_version.empty()) model.set_producer_version(options.producer_version);
  if (!options.doc_string.empty()) model.set_doc_string(options.doc_string);
  onnx::GraphProto* proto = model.mutable_graph();
  proto->set_name(graph.name.empty() ? "model" : graph.name);
  LayerEmitter emitter(graph, weights, proto);
  for (int i = 0; i < static_cast<int>(graph.layers.size()); ++i) RETURN_IF_ERROR(emitter.Emit(i));
  for (int i : graph.inputs) {
    SetValueInfo(graph.layers[i].name, graph.layers[i].config.int_input, graph.layers[i].output_shape,
                 proto->add_input());
  }
  const GraphLayerSpec& out = graph.layers[graph.output];
  SetValueInfo(out.name, emitter.IsInt(graph.output), out.output_shape, proto->add_output());
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    return absl::InternalError(absl::StrCat("ONNX export of model '", graph.name, "': the model did not serialize"));
  }
  return bytes;
}

absl::Status WriteOnnxFile(Env* env, const std::string& path, const ModelGraph& graph, const FloatTensorMap& weights,
                           const OnnxExportOptions& options) {
  ASSIGN_OR_RETURN(const std::string bytes, ExportOnnx(graph, weights, options));
  return env->WriteFileAtomic(path, bytes);
}

}  // namespace pstrain
