#include "common/graph/keras_json.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/graph/layer_config.h"
#include "common/graph/shape_inference.h"
#include "common/config/json_util.h"
#include "common/platform/status_macros.h"
#include "nlohmann/json.hpp"

namespace pstrain {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& what) { return absl::InvalidArgumentError(what); }

// Layer names (and class names) appear in every message; Keras's are short.
constexpr size_t kMaxLayerName = 256;

// A reference to a layer's output: Keras 2 ["name", node, tensor, {kwargs}], Keras 3
// {"class_name": "__keras_tensor__", "config": {"keras_history": ["name", node, tensor]}}.
struct TensorRef {
  std::string layer;
  int64_t node = 0, tensor = 0;
};

bool IsKeras3Tensor(const json& v) {
  return v.is_object() && v.contains("class_name") && v["class_name"] == "__keras_tensor__" && v.contains("config") &&
         v["config"].is_object() && v["config"].contains("keras_history");
}

absl::StatusOr<TensorRef> ReadHistory(const json& h, const std::string& where) {
  if (!h.is_array() || h.size() < 3 || !h[0].is_string() || !h[1].is_number_integer() || !h[2].is_number_integer()) {
    return Bad(absl::StrCat(where, ": a tensor reference must be [layer_name, node_index, tensor_index], got ",
                            JsonExcerpt(h)));
  }
  return TensorRef{h[0].get<std::string>(), h[1].get<int64_t>(), h[2].get<int64_t>()};
}

// Appends the tensors of one Keras 3 call argument (a tensor, or a list of them) to `out`.
absl::Status CollectKeras3(const json& arg, const std::string& where, std::vector<TensorRef>* out) {
  if (IsKeras3Tensor(arg)) {
    ASSIGN_OR_RETURN(TensorRef ref, ReadHistory(arg["config"]["keras_history"], where));
    out->push_back(ref);
    return absl::OkStatus();
  }
  if (arg.is_array()) {
    for (const json& e : arg) RETURN_IF_ERROR(CollectKeras3(e, where, out));
    return absl::OkStatus();
  }
  return Bad(absl::StrCat(where, ": call argument ", JsonExcerpt(arg), " is not a tensor; only tensors are supported"));
}

// The tensors one call (node) of a layer takes, in order. Tensors passed by keyword are accepted
// only as Cross's second input `x` (x0 * (W x + b) + x), everything else is refused.
absl::StatusOr<std::vector<TensorRef>> ReadNode(const json& node, const std::string& layer) {
  const std::string where = absl::StrCat("layer '", layer, "' inbound_nodes");
  std::vector<TensorRef> refs;
  const json* kwargs = nullptr;
  if (node.is_object()) {  // Keras 3
    if (node.contains("args")) {
      if (!node["args"].is_array()) return Bad(where + ": 'args' must be a list");
      for (const json& a : node["args"]) RETURN_IF_ERROR(CollectKeras3(a, where, &refs));
    }
    if (node.contains("kwargs")) kwargs = &node["kwargs"];
  } else if (node.is_array()) {  // Keras 2: a list of [name, node, tensor, kwargs]
    for (const json& e : node) {
      ASSIGN_OR_RETURN(TensorRef ref, ReadHistory(e, where));
      refs.push_back(ref);
      if (e.size() > 3 && e[3].is_object() && !e[3].empty()) {
        if (kwargs != nullptr) return Bad(where + ": keyword arguments on several inputs are not supported");
        kwargs = &e[3];
      }
    }
  } else {
    return Bad(where + ": a node must be a list (Keras 2) or an object with 'args' (Keras 3)");
  }
  if (kwargs != nullptr) {
    if (!kwargs->is_object()) return Bad(where + ": 'kwargs' must be an object");
    for (const auto& [key, value] : kwargs->items()) {
      if (value.is_null()) continue;
      // Keras 3 records the training flag a layer was built with; fit and predict pass their own,
      // which wins over it, so it never decides how the layer runs.
      if (key == "training" && value.is_boolean()) continue;
      if (key == "x" && (value.is_array() || IsKeras3Tensor(value))) {
        if (IsKeras3Tensor(value)) {
          RETURN_IF_ERROR(CollectKeras3(value, where, &refs));
        } else {
          ASSIGN_OR_RETURN(TensorRef ref, ReadHistory(value, where));
          refs.push_back(ref);
        }
        continue;
      }
      return Bad(absl::StrCat(where, ": call argument ", QuotedExcerpt(key), " = ", JsonExcerpt(value),
                              " is not supported (layers are called on tensors only; masks and training flags "
                              "are not passed)"));
    }
  }
  if (refs.empty()) return Bad(where + ": the call has no input tensor");
  return refs;
}

// input_layers / output_layers: [["a", 0, 0], ...] or one ["a", 0, 0].
absl::StatusOr<std::vector<TensorRef>> ReadEnds(const json& config, const char* key) {
  if (!config.contains(key) || !config[key].is_array()) {
    return Bad(absl::StrCat("the model config has no '", key, "' list"));
  }
  const json& v = config[key];
  std::vector<TensorRef> refs;
  if (!v.empty() && v[0].is_string()) {
    ASSIGN_OR_RETURN(TensorRef ref, ReadHistory(v, key));
    refs.push_back(ref);
    return refs;
  }
  for (const json& e : v) {
    ASSIGN_OR_RETURN(TensorRef ref, ReadHistory(e, key));
    refs.push_back(ref);
  }
  return refs;
}

std::string LayerName(const json& layer) {
  if (layer.contains("name") && layer["name"].is_string()) return layer["name"].get<std::string>();
  if (layer.contains("config") && layer["config"].is_object() && layer["config"].contains("name") &&
      layer["config"]["name"].is_string()) {
    return layer["config"]["name"].get<std::string>();
  }
  return "";
}

absl::StatusOr<GraphLayerSpec> ReadLayer(const json& layer, size_t position) {
  if (!layer.is_object() || !layer.contains("class_name") || !layer["class_name"].is_string()) {
    return Bad(absl::StrCat("layer #", position, ": needs a string 'class_name'"));
  }
  GraphLayerSpec spec;
  spec.name = LayerName(layer);
  if (spec.name.empty()) return Bad(absl::StrCat("layer #", position, ": has no name"));
  if (spec.name.size() > kMaxLayerName) {
    return Bad(absl::StrCat("layer #", position, ": its name ", QuotedExcerpt(spec.name), " is longer than ",
                            kMaxLayerName, " bytes"));
  }
  if (layer["class_name"].get<std::string>().size() > kMaxLayerName) {
    return Bad(absl::StrCat("layer '", spec.name, "': class_name ", QuotedExcerpt(layer["class_name"].get<std::string>()),
                            " is not supported; supported classes: ", SupportedLayerClasses()));
  }
  RETURN_IF_ERROR(ParseLayerConfig(layer["class_name"].get<std::string>(),
                                   layer.contains("config") ? layer["config"] : json::object(), &spec));
  return spec;
}

absl::Status ReadSequential(const json& config, ModelGraph* graph) {
  if (!config.contains("layers") || !config["layers"].is_array() || config["layers"].empty()) {
    return Bad("a Sequential model needs a non-empty 'layers' list");
  }
  const json& layers = config["layers"];
  for (size_t i = 0; i < layers.size(); ++i) {
    ASSIGN_OR_RETURN(GraphLayerSpec spec, ReadLayer(layers[i], i));
    if (i == 0 && spec.kind != LayerKind::kInput) {
      // Keras 2 without an InputLayer: the first layer carries the input shape.
      const json& c = layers[0].contains("config") ? layers[0]["config"] : json::object();
      if (!c.is_object() || (!c.contains("batch_input_shape") && !c.contains("batch_shape"))) {
        return Bad(absl::StrCat("Sequential model: its first layer '", spec.name,
                                "' has no input shape; build the model with keras.Input(shape=...) first"));
      }
      GraphLayerSpec input;
      input.name = spec.name + "_input";
      json input_config = {{"batch_input_shape", c.contains("batch_input_shape") ? c["batch_input_shape"]
                                                                                 : c["batch_shape"]}};
      RETURN_IF_ERROR(ParseLayerConfig("InputLayer", input_config, &input));
      graph->layers.push_back(input);
    } else if (i > 0 && spec.kind == LayerKind::kInput) {
      return Bad(absl::StrCat("Sequential model: InputLayer '", spec.name, "' is not the first layer"));
    }
    if (!graph->layers.empty()) spec.inputs = {static_cast<int>(graph->layers.size()) - 1};
    graph->layers.push_back(spec);
  }
  graph->inputs = {0};
  graph->output = static_cast<int>(graph->layers.size()) - 1;
  graph->sequential = true;
  return absl::OkStatus();
}

// Orders `layers` so every layer follows its inputs; refuses cycles.
absl::Status SortTopologically(ModelGraph* graph) {
  const int n = static_cast<int>(graph->layers.size());
  std::vector<int> order, state(n, 0);  // 0 new, 1 on the stack, 2 done
  std::vector<std::pair<int, size_t>> stack;
  for (int root = 0; root < n; ++root) {
    if (state[root] != 0) continue;
    stack.push_back({root, 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [layer, next] = stack.back();
      const std::vector<int>& ins = graph->layers[layer].inputs;
      if (next < ins.size()) {
        const int in = ins[next++];
        if (state[in] == 1) return Bad(absl::StrCat("layer '", graph->layers[in].name, "' is part of a cycle"));
        if (state[in] == 0) {
          state[in] = 1;
          stack.push_back({in, 0});
        }
        continue;
      }
      state[layer] = 2;
      order.push_back(layer);
      stack.pop_back();
    }
  }
  std::vector<int> new_index(n);
  for (int i = 0; i < n; ++i) new_index[order[i]] = i;
  std::vector<GraphLayerSpec> sorted;
  for (int old : order) {
    sorted.push_back(std::move(graph->layers[old]));
    for (int& in : sorted.back().inputs) in = new_index[in];
  }
  graph->layers = std::move(sorted);
  for (int& in : graph->inputs) in = new_index[in];
  graph->output = new_index[graph->output];
  return absl::OkStatus();
}

absl::Status ReadFunctional(const json& config, ModelGraph* graph) {
  if (!config.contains("layers") || !config["layers"].is_array()) return Bad("the model config has no 'layers' list");
  const json& layers = config["layers"];
  std::map<std::string, int> index;
  for (size_t i = 0; i < layers.size(); ++i) {
    ASSIGN_OR_RETURN(GraphLayerSpec spec, ReadLayer(layers[i], i));
    if (!index.emplace(spec.name, static_cast<int>(i)).second) {
      return Bad(absl::StrCat("two layers are named '", spec.name, "'"));
    }
    graph->layers.push_back(spec);
  }
  auto find = [&](const TensorRef& ref, const std::string& where) -> absl::StatusOr<int> {
    auto it = index.find(ref.layer);
    if (it == index.end()) {
      return Bad(absl::StrCat(where, ": refers to unknown layer '", ref.layer.substr(0, kMaxLayerName), "'"));
    }
    if (ref.tensor != 0) {
      return Bad(absl::StrCat(where, ": refers to output ", ref.tensor, " of layer '", ref.layer,
                              "'; layers with several outputs are not supported"));
    }
    if (ref.node != 0) {
      return Bad(absl::StrCat(where, ": refers to call ", ref.node, " of layer '", ref.layer,
                              "'; a layer called more than once (a shared layer) is not supported"));
    }
    return it->second;
  };
  for (size_t i = 0; i < layers.size(); ++i) {
    GraphLayerSpec& spec = graph->layers[i];
    const json nodes = layers[i].contains("inbound_nodes") && layers[i]["inbound_nodes"].is_array()
                           ? layers[i]["inbound_nodes"] : json::array();
    if (spec.kind == LayerKind::kInput) continue;
    if (nodes.size() != 1) {
      return Bad(absl::StrCat("layer '", spec.name, "' is called ", nodes.size(),
                              " times; each layer must be called exactly once (shared layers are not supported: "
                              "give each call its own layer)"));
    }
    ASSIGN_OR_RETURN(std::vector<TensorRef> refs, ReadNode(nodes[0], spec.name));
    for (const TensorRef& ref : refs) {
      ASSIGN_OR_RETURN(int in, find(ref, absl::StrCat("layer '", spec.name, "'")));
      spec.inputs.push_back(in);
    }
  }
  ASSIGN_OR_RETURN(std::vector<TensorRef> ins, ReadEnds(config, "input_layers"));
  ASSIGN_OR_RETURN(std::vector<TensorRef> outs, ReadEnds(config, "output_layers"));
  for (const TensorRef& ref : ins) {
    ASSIGN_OR_RETURN(int in, find(ref, "input_layers"));
    if (graph->layers[in].kind != LayerKind::kInput) {
      return Bad(absl::StrCat("input_layers: '", ref.layer, "' is not an InputLayer"));
    }
    graph->inputs.push_back(in);
  }
  for (size_t i = 0; i < graph->layers.size(); ++i) {
    if (graph->layers[i].kind == LayerKind::kInput &&
        std::find(graph->inputs.begin(), graph->inputs.end(), static_cast<int>(i)) == graph->inputs.end()) {
      return Bad(absl::StrCat("InputLayer '", graph->layers[i].name, "' is not among the model's input_layers"));
    }
  }
  if (outs.size() != 1) {
    std::vector<std::string> names;
    for (const TensorRef& ref : outs) names.push_back(ref.layer);
    return Bad(absl::StrCat("the model has ", outs.size(), " outputs (", absl::StrJoin(names, ", "),
                            "); one output (and one loss) per model is supported"));
  }
  ASSIGN_OR_RETURN(graph->output, find(outs[0], "output_layers"));
  return SortTopologically(graph);
}

absl::StatusOr<ModelGraph> ReadModel(const json& model) {
  if (!model.is_object() || !model.contains("class_name") || !model["class_name"].is_string() ||
      !model.contains("config") || !model["config"].is_object()) {
    return Bad("not a Keras model: expected an object with 'class_name' and 'config' (the text of model.to_json())");
  }
  const std::string cls = model["class_name"].get<std::string>();
  const json& config = model["config"];
  ModelGraph graph;
  graph.name = config.contains("name") && config["name"].is_string() ? config["name"].get<std::string>() : "model";
  if (cls == "Sequential") {
    RETURN_IF_ERROR(ReadSequential(config, &graph));
  } else if (cls == "Functional" || cls == "Model") {
    RETURN_IF_ERROR(ReadFunctional(config, &graph));
  } else {
    return Bad(absl::StrCat("model class ", QuotedExcerpt(cls),
                            "' is not supported; supported: Sequential, Functional (a subclassed model has no "
                            "graph in its JSON)"));
  }
  if (graph.layers.size() < 2) return Bad("the model has no layer besides its input");
  RETURN_IF_ERROR(InferShapesAndVariables(&graph));
  return graph;
}

}  // namespace

absl::StatusOr<ModelGraph> ReadKerasModelJson(absl::string_view text, absl::string_view what) {
  absl::StatusOr<json> parsed = ParseJson(text, what);  // bounded depth; syntax errors with line and column
  if (!parsed.ok()) return parsed.status();
  const json& model = *parsed;
  absl::StatusOr<ModelGraph> graph;
  try {
    graph = ReadModel(model);
  } catch (const json::exception& e) {
    // Every access above checks the type first; this keeps a missed check an error, not a crash.
    graph = Bad(absl::StrCat("unexpected JSON layout: ", e.what()));
  }
  if (!graph.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", graph.status().message()));
  return graph;
}

absl::Status SetEmbeddingInputDims(const std::map<std::string, int64_t>& input_dims, json* model) {
  if (!model->is_object() || !model->contains("config") || !(*model)["config"].is_object() ||
      !(*model)["config"].contains("layers") || !(*model)["config"]["layers"].is_array()) {
    return Bad("the model has no config.layers list");
  }
  std::map<std::string, json*> embeddings;
  for (json& layer : (*model)["config"]["layers"]) {
    if (layer.is_object() && layer.value("class_name", "") == "Embedding" && layer.contains("config") &&
        layer["config"].is_object()) {
      embeddings[LayerName(layer)] = &layer["config"];
    }
  }
  for (const auto& [name, rows] : input_dims) {
    if (embeddings.count(name) == 0) return Bad(absl::StrCat("the model has no Embedding layer '", name, "'"));
  }
  for (const auto& [name, rows] : input_dims) (*embeddings[name])["input_dim"] = rows;
  return absl::OkStatus();
}

int ModelGraph::FindVariable(const std::string& name) const {
  for (size_t i = 0; i < variables.size(); ++i) {
    if (variables[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

const char* ActivationName(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::kLinear: return "linear";
    case ActivationKind::kRelu: return "relu";
    case ActivationKind::kSigmoid: return "sigmoid";
    case ActivationKind::kTanh: return "tanh";
    case ActivationKind::kSoftmax: return "softmax";
    case ActivationKind::kGelu: return "gelu";
    case ActivationKind::kSilu: return "silu";
    case ActivationKind::kElu: return "elu";
  }
  return "?";
}

}  // namespace pstrain
