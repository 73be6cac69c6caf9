#include "common/plan/model_variables.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/graph/model_graph.h"
#include "common/platform/checked_math.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"

namespace pstrain {
namespace {

absl::Status LayerError(size_t i, const LayerSpec& layer, const std::vector<int64_t>& in, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("job spec: model.layers[", i, "] (", layer.type, " \"", layer.name,
                                                 "\") cannot take input of shape ", ShapeString(in), ": ", why));
}

std::string LayerName(size_t i, const LayerSpec& layer) {
  return absl::StrCat("job spec: model.layers[", i, "] (", layer.type, " \"", layer.name, "\")");
}

absl::StatusOr<std::vector<int64_t>> OutputShape(size_t i, const LayerSpec& layer, const std::vector<int64_t>& in) {
  if (layer.type == "dense") {
    if (in.size() != 1) return LayerError(i, layer, in, "dense needs a flat input; add a flatten layer before it");
    return std::vector<int64_t>{layer.units};
  }
  if (layer.type == "conv2d") {
    if (in.size() != 3) return LayerError(i, layer, in, "conv2d needs [height, width, channels]");
    if (layer.padding == "same") return std::vector<int64_t>{in[0], in[1], layer.filters};
    const int64_t h = in[0] - layer.kernel_size + 1, w = in[1] - layer.kernel_size + 1;
    if (h <= 0 || w <= 0) return LayerError(i, layer, in, "the kernel is larger than the input");
    return std::vector<int64_t>{h, w, layer.filters};
  }
  if (layer.type == "max_pool2d") {
    if (in.size() != 3) return LayerError(i, layer, in, "max_pool2d needs [height, width, channels]");
    const int64_t h = in[0] / layer.pool_size, w = in[1] / layer.pool_size;
    if (h <= 0 || w <= 0) return LayerError(i, layer, in, "the pool is larger than the input");
    return std::vector<int64_t>{h, w, in[2]};
  }
  if (layer.type == "flatten") {
    absl::StatusOr<int64_t> n = CheckedNumElements(in, LayerName(i, layer));
    if (!n.ok()) return n.status();
    return std::vector<int64_t>{*n};
  }
  return in;  // relu
}

}  // namespace

absl::StatusOr<std::vector<std::vector<int64_t>>> LayerOutputShapes(const ModelSpec& model) {
  std::vector<std::vector<int64_t>> out;
  if (model.is_graph()) {  // shapes the graph reader inferred and checked
    for (const GraphLayerSpec& layer : model.graph->layers) {
      if (layer.kind != LayerKind::kInput) out.push_back(layer.output_shape);
    }
    return out;
  }
  std::vector<int64_t> shape = model.input_shape;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    ASSIGN_OR_RETURN(shape, OutputShape(i, model.layers[i], shape));
    out.push_back(shape);
  }
  return out;
}

absl::StatusOr<std::vector<VariableSpec>> ModelVariables(const ModelSpec& model) {
  if (model.is_graph()) {
    std::set<std::string> tables;  // the fields' Embedding tables move by rows
    for (const EmbeddingFieldSpec& f : model.fields) {
      for (const std::string& layer : f.tables) tables.insert(layer + "/embeddings");
    }
    std::vector<VariableSpec> vars;
    for (const GraphVariableSpec& v : model.graph->variables) {
      vars.push_back({v.name, v.shape, DType::kFloat32, v.initializer, tables.count(v.name) > 0, v.trainable});
      // A dynamic table's rows are its declared capacity (as a field's), not the layer's input_dim.
      const std::string layer = v.name.substr(0, v.name.rfind('/'));
      if (auto d = model.keras_dynamic_tables.find(layer); d != model.keras_dynamic_tables.end() && vars.back().sparse) {
        vars.back().shape = {d->second.max_rows, v.shape.back()};
        vars.back().dynamic = d->second;
      }
    }
    return vars;
  }
  ASSIGN_OR_RETURN(auto outputs, LayerOutputShapes(model));
  RETURN_IF_ERROR(CheckedNumElements(model.input_shape, "job spec: model.input_shape").status());
  for (size_t i = 0; i < outputs.size(); ++i) {
    RETURN_IF_ERROR(CheckedNumElements(outputs[i], LayerName(i, model.layers[i]) + " output").status());
  }
  std::vector<VariableSpec> vars;
  for (const EmbeddingFieldSpec& f : model.fields) {
    // A dynamic table's rows are its declared capacity: the plan budgets that many.
    const int64_t rows = f.dynamic ? f.dynamic->max_rows : f.vocabulary_size;
    vars.push_back({f.name + "/embeddings", {rows, f.embedding_dim}, DType::kFloat32, f.embeddings_initializer,
                    /*sparse=*/true, /*trainable=*/true, f.dynamic});
  }
  std::vector<int64_t> in = model.input_shape;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const LayerSpec& layer = model.layers[i];
    if (layer.type == "dense") {
      vars.push_back({layer.name + "/kernel", {in[0], layer.units}, DType::kFloat32, layer.kernel_initializer});
      if (layer.use_bias) vars.push_back({layer.name + "/bias", {layer.units}, DType::kFloat32, layer.bias_initializer});
    } else if (layer.type == "conv2d") {
      vars.push_back({layer.name + "/kernel",
                      {layer.kernel_size, layer.kernel_size, in[2], layer.filters},
                      DType::kFloat32,
                      layer.kernel_initializer});
      if (layer.use_bias) {
        vars.push_back({layer.name + "/bias", {layer.filters}, DType::kFloat32, layer.bias_initializer});
      }
    }
    in = outputs[i];
  }
  for (const VariableSpec& v : vars) {
    RETURN_IF_ERROR(CheckedNumBytes(v.shape, DTypeSize(v.dtype), absl::StrCat("variable ", v.name)).status());
  }
  return vars;
}

absl::StatusOr<std::vector<std::vector<int>>> FieldTableVariables(const ModelSpec& model,
                                                                  const std::vector<VariableSpec>& variables) {
  std::map<std::string, int> index;
  for (size_t v = 0; v < variables.size(); ++v) index[variables[v].name] = static_cast<int>(v);
  std::vector<std::vector<int>> out;
  for (size_t f = 0; f < model.fields.size(); ++f) {
    const EmbeddingFieldSpec& field = model.fields[f];
    std::vector<std::string> layers = field.tables;
    if (layers.empty()) layers.push_back(field.name);
    out.emplace_back();
    for (const std::string& layer : layers) {
      auto it = index.find(layer + "/embeddings");
      if (it == index.end() || !variables[it->second].sparse) {
        return absl::InvalidArgumentError(absl::StrCat("field ", f, " looks up table '", layer,
                                                       "/embeddings', which is not a sparse variable of the model"));
      }
      out.back().push_back(it->second);
    }
  }
  return out;
}

}  // namespace pstrain
