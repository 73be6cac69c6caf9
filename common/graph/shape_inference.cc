#include "common/graph/shape_inference.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/graph/keras_initializer.h"
#include "common/platform/checked_math.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"

namespace pstrain {
namespace {

using Shape = std::vector<int64_t>;


class Inferrer {
 public:
  Inferrer(ModelGraph* graph, int index) : graph_(graph), spec_(graph->layers[index]), index_(index) {}

  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat("layer '", spec_.name, "' (", spec_.class_name, "): ", what));
  }
  const Shape& In(size_t i) const { return graph_->layers[spec_.inputs[i]].output_shape; }
  absl::Status Arity(size_t lo, size_t hi) const {
    const size_t n = spec_.inputs.size();
    if (n < lo || n > hi) {
      return Error(hi == lo ? absl::StrCat("takes ", lo, " input(s), got ", n)
                            : absl::StrCat("takes ", lo, " to ", hi, " inputs, got ", n));
    }
    return absl::OkStatus();
  }
  absl::Status SameShapes() const {
    for (size_t i = 1; i < spec_.inputs.size(); ++i) {
      if (In(i) != In(0)) {
        return Error(absl::StrCat("inputs must have equal shapes (no broadcasting); got ", ShapeString(In(0)),
                                  " and ", ShapeString(In(i))));
      }
    }
    return absl::OkStatus();
  }
  absl::Status Vector(size_t i) const {
    if (In(i).size() != 1) return Error(absl::StrCat("input ", i, " must be [batch, features]; got [batch] + ", ShapeString(In(i))));
    return absl::OkStatus();
  }
  // axis counted Keras's way (0 = batch, negative from the end) must be the last one.
  absl::Status LastAxis(int64_t axis) const {
    const int64_t rank = static_cast<int64_t>(In(0).size()) + 1;
    if (axis != -1 && axis != rank - 1) {
      return Error(absl::StrCat("config key 'axis' = ", axis, " is not supported; only the last axis (-1)"));
    }
    return absl::OkStatus();
  }
  // The element count of a per-example shape or a variable, checked (shapes come from the user):
  // its float32 bytes must fit kMaxCheckedBytes.
  absl::StatusOr<int64_t> Count(const Shape& s, const std::string& what) const {
    const std::string where = absl::StrCat("layer '", spec_.name, "' ", what);
    RETURN_IF_ERROR(CheckedNumBytes(s, sizeof(float), where).status());
    return CheckedNumElements(s, where);
  }
  absl::Status Variable(const std::string& weight, Shape shape, bool trainable = true) {
    const std::string name = absl::StrCat(spec_.name, "/", weight);
    RETURN_IF_ERROR(Count(shape, "variable " + name).status());
    GraphVariableSpec variable{name, std::move(shape), trainable, index_};
    auto given = spec_.config.initializers.find(InitializerKeyForWeight(weight));
    variable.initializer = given != spec_.config.initializers.end()
                               ? given->second
                               : DefaultInitializerForWeight(weight, spec_.kind == LayerKind::kCross);
    graph_->variables.push_back(std::move(variable));
    return absl::OkStatus();
  }

  absl::Status Run();

 private:
  ModelGraph* graph_;
  GraphLayerSpec& spec_;
  int index_;
};

absl::Status Inferrer::Run() {
  LayerConfig& c = spec_.config;
  Shape& out = spec_.output_shape;
  if (spec_.kind == LayerKind::kInput) {
    if (!spec_.inputs.empty()) return Error("an InputLayer takes no inputs");
    out = c.input_shape;
    return absl::OkStatus();
  }
  switch (spec_.kind) {
    case LayerKind::kInput:
      break;
    case LayerKind::kDense: {
      RETURN_IF_ERROR(Arity(1, 1));
      if (In(0).empty()) return Error("needs an input with features");
      out = In(0);
      const int64_t in = out.back();
      out.back() = c.units;
      RETURN_IF_ERROR(Variable("kernel", {in, c.units}));
      if (c.use_bias) RETURN_IF_ERROR(Variable("bias", {c.units}));
      break;
    }
    case LayerKind::kActivation:
    case LayerKind::kReLU:
    case LayerKind::kDropout:
      RETURN_IF_ERROR(Arity(1, 1));
      out = In(0);
      break;
    case LayerKind::kFlatten: {
      RETURN_IF_ERROR(Arity(1, 1));
      ASSIGN_OR_RETURN(const int64_t total, Count(In(0), "input"));
      out = {total};
      break;
    }
    case LayerKind::kReshape: {
      RETURN_IF_ERROR(Arity(1, 1));
      out = c.target_shape;
      int unknown = -1;
      int64_t known = 1;
      for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == -1 && unknown < 0) {
          unknown = static_cast<int>(i);
        } else if (out[i] <= 0) {
          return Error(absl::StrCat("config key 'target_shape' = ", ShapeString(out),
                                    " must have positive dimensions and at most one -1"));
        } else if (!CheckedMul(known, out[i], &known)) {
          return Error(absl::StrCat("config key 'target_shape' = ", ShapeString(out), " is too large"));
        }
      }
      ASSIGN_OR_RETURN(const int64_t total, Count(In(0), "input"));
      if (unknown >= 0 && total % known == 0) out[unknown] = total / known;
      ASSIGN_OR_RETURN(const int64_t target, Count(out, "target_shape"));
      if (target != total) {
        return Error(absl::StrCat("cannot reshape ", ShapeString(In(0)), " to target_shape ",
                                  ShapeString(c.target_shape)));
      }
      break;
    }
    case LayerKind::kConcatenate: {
      RETURN_IF_ERROR(Arity(2, 1 << 20));
      const int64_t rank = static_cast<int64_t>(In(0).size());
      int64_t axis = c.axis < 0 ? c.axis + rank + 1 : c.axis;
      if (axis < 1 || axis > rank) {
        return Error(absl::StrCat("config key 'axis' = ", c.axis, " is out of range for inputs of rank ", rank + 1,
                                  " (the batch axis cannot be concatenated)"));
      }
      c.axis = axis - 1;  // from here on: the axis of the per-example shape
      out = In(0);
      out[c.axis] = 0;
      for (size_t i = 0; i < spec_.inputs.size(); ++i) {
        Shape a = In(i), b = In(0);
        if (a.size() != b.size()) return Error("inputs must have the same rank");
        a[c.axis] = b[c.axis] = 0;
        if (a != b) {
          return Error(absl::StrCat("inputs differ beyond the concatenation axis: ", ShapeString(In(0)), " and ",
                                    ShapeString(In(i))));
        }
        out[c.axis] += In(i)[c.axis];
      }
      break;
    }
    case LayerKind::kAdd:
    case LayerKind::kMultiply:
    case LayerKind::kAverage:
      RETURN_IF_ERROR(Arity(2, 1 << 20));
      RETURN_IF_ERROR(SameShapes());
      out = In(0);
      break;
    case LayerKind::kSubtract:
      RETURN_IF_ERROR(Arity(2, 2));
      RETURN_IF_ERROR(SameShapes());
      out = In(0);
      break;
    case LayerKind::kDot:
      RETURN_IF_ERROR(Arity(2, 2));
      RETURN_IF_ERROR(Vector(0));
      RETURN_IF_ERROR(Vector(1));
      RETURN_IF_ERROR(SameShapes());
      if (c.axis != -1 && c.axis != 1) {
        return Error(absl::StrCat("config key 'axes' = ", c.axis, " is not supported; only the last axis (-1)"));
      }
      out = {1};
      break;
    case LayerKind::kEmbedding:
      RETURN_IF_ERROR(Arity(1, 1));
      out = In(0);
      out.push_back(c.output_dim);
      RETURN_IF_ERROR(Variable("embeddings", {c.input_dim, c.output_dim}));
      break;
    case LayerKind::kLayerNormalization:
    case LayerKind::kBatchNormalization: {
      RETURN_IF_ERROR(Arity(1, 1));
      if (In(0).empty()) return Error("needs an input with features");
      RETURN_IF_ERROR(LastAxis(c.axis));
      out = In(0);
      const int64_t d = out.back();
      if (c.scale) RETURN_IF_ERROR(Variable("gamma", {d}));
      if (c.center) RETURN_IF_ERROR(Variable("beta", {d}));
      if (spec_.kind == LayerKind::kBatchNormalization) {
        RETURN_IF_ERROR(Variable("moving_mean", {d}, false));
        RETURN_IF_ERROR(Variable("moving_variance", {d}, false));
      }
      break;
    }
    case LayerKind::kGlobalAveragePooling1D:
    case LayerKind::kGlobalMaxPooling1D:
    case LayerKind::kGlobalAveragePooling2D:
    case LayerKind::kGlobalMaxPooling2D: {
      RETURN_IF_ERROR(Arity(1, 1));
      const bool two_d =
          spec_.kind == LayerKind::kGlobalAveragePooling2D || spec_.kind == LayerKind::kGlobalMaxPooling2D;
      const size_t rank = two_d ? 3 : 2;
      if (In(0).size() != rank) {
        return Error(absl::StrCat("needs [batch, ", two_d ? "height, width" : "steps", ", channels] input; got [batch] + ",
                                  ShapeString(In(0))));
      }
      out = c.keepdims ? Shape(rank - 1, 1) : Shape();
      out.push_back(In(0).back());
      break;
    }
    case LayerKind::kCross: {
      RETURN_IF_ERROR(Arity(1, 2));
      RETURN_IF_ERROR(Vector(0));
      RETURN_IF_ERROR(SameShapes());
      const int64_t d = In(0)[0];
      out = {d};
      // Keras names the inner Dense layers `dense` (and `dense_1` for the second of the low-rank pair).
      if (c.projection_dim == 0) {
        RETURN_IF_ERROR(Variable("dense/kernel", {d, d}));
        if (c.use_bias) RETURN_IF_ERROR(Variable("dense/bias", {d}));
      } else {
        RETURN_IF_ERROR(Variable("dense/kernel", {d, c.projection_dim}));
        RETURN_IF_ERROR(Variable("dense_1/kernel", {c.projection_dim, d}));
        if (c.use_bias) RETURN_IF_ERROR(Variable("dense_1/bias", {d}));
      }
      break;
    }
    case LayerKind::kConv2D:
    case LayerKind::kMaxPooling2D:
    case LayerKind::kAveragePooling2D: {
      RETURN_IF_ERROR(Arity(1, 1));
      if (In(0).size() != 3) {
        return Error(absl::StrCat("needs [batch, height, width, channels] input; got [batch] + ", ShapeString(In(0))));
      }
      // TensorFlow's sizes: valid floor((in - window) / stride) + 1, same ceil(in / stride).
      auto size = [&](int64_t in, int64_t window, int64_t stride) {
        return c.same_padding ? (in + stride - 1) / stride : (in - window) / stride + 1;
      };
      if (!c.same_padding && (In(0)[0] < c.window_h || In(0)[1] < c.window_w)) {
        return Error(absl::StrCat("its window ", c.window_h, "x", c.window_w, " is larger than its input ",
                                  ShapeString(In(0)), " with padding 'valid'"));
      }
      const bool conv = spec_.kind == LayerKind::kConv2D;
      out = {size(In(0)[0], c.window_h, c.stride_h), size(In(0)[1], c.window_w, c.stride_w),
             conv ? c.filters : In(0)[2]};
      if (conv) {
        RETURN_IF_ERROR(Variable("kernel", {c.window_h, c.window_w, In(0)[2], c.filters}));
        if (c.use_bias) RETURN_IF_ERROR(Variable("bias", {c.filters}));
      }
      break;
    }
    case LayerKind::kDotInteraction: {
      RETURN_IF_ERROR(Arity(2, 1 << 20));
      for (size_t i = 0; i < spec_.inputs.size(); ++i) RETURN_IF_ERROR(Vector(i));
      RETURN_IF_ERROR(SameShapes());
      const int64_t f = static_cast<int64_t>(spec_.inputs.size());
      out = {c.skip_gather ? f * f : c.self_interaction ? f * (f + 1) / 2 : f * (f - 1) / 2};
      break;
    }
  }
  for (int64_t d : out) {
    if (d <= 0) return Error(absl::StrCat("its output shape ", ShapeString(out), " is empty"));
  }
  return Count(out, "output").status();
}

}  // namespace

absl::Status InferShapesAndVariables(ModelGraph* graph) {
  graph->variables.clear();
  for (size_t i = 0; i < graph->layers.size(); ++i) {
    RETURN_IF_ERROR(Inferrer(graph, static_cast<int>(i)).Run());
  }
  // Layers the output does not depend on would train nothing: refuse them, naming one.
  std::vector<bool> used(graph->layers.size(), false);
  used[graph->output] = true;
  for (int i = graph->output; i >= 0; --i) {
    if (!used[i]) continue;
    for (int in : graph->layers[i].inputs) used[in] = true;
  }
  for (size_t i = 0; i < used.size(); ++i) {
    if (!used[i]) {
      return absl::InvalidArgumentError(absl::StrCat("layer '", graph->layers[i].name,
                                                     "' does not lead to the model's output; remove it"));
    }
  }
  return absl::OkStatus();
}

}  // namespace pstrain
