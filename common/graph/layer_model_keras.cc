#include "common/graph/layer_model_keras.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/graph/keras_initializer.h"
#include "common/plan/model_variables.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

using nlohmann::json;

json ShapeJson(const std::vector<int64_t>& shape) {
  json out = json::array({nullptr});
  for (int64_t d : shape) out.push_back(d);
  return out;
}

// Writes layers in one flavor; each call names the layer's inputs by layer name.
class KerasWriter {
 public:
  explicit KerasWriter(KerasJsonFlavor flavor) : flavor_(flavor) {}

  absl::Status Input(const std::string& name, const std::vector<int64_t>& shape, const char* dtype) {
    json config = {{"dtype", dtype}, {"sparse", false}, {"ragged", false}, {"name", name}};
    config[keras3() ? "batch_shape" : "batch_input_shape"] = ShapeJson(shape);
    RETURN_IF_ERROR(Add("InputLayer", name, std::move(config), {}, shape));
    inputs_.push_back(name);
    dtypes_[name] = dtype;
    return absl::OkStatus();
  }

  // `config` gets name, trainable and dtype here; `shape` is the layer's output per example.
  absl::Status Layer(const std::string& class_name, const std::string& name, json config,
                     const std::vector<std::string>& from, const std::vector<int64_t>& shape) {
    config["name"] = name;
    config["trainable"] = true;
    config["dtype"] = keras3() ? json{{"module", "keras"},
                                      {"class_name", "DTypePolicy"},
                                      {"config", {{"name", "float32"}}},
                                      {"registered_name", nullptr}}
                               : json("float32");
    return Add(class_name, name, std::move(config), from, shape);
  }

  bool keras3() const { return flavor_ == KerasJsonFlavor::kKeras3; }

  json Model(const std::string& name, const std::string& output) const {
    // Keras 3 writes one tensor as [name, 0, 0] and several as a list of them; Keras 2 always a list.
    json input_layers = json::array();
    for (const std::string& in : inputs_) input_layers.push_back({in, 0, 0});
    if (keras3() && inputs_.size() == 1) input_layers = input_layers[0];
    json output_layers = json::array({output, 0, 0});
    if (!keras3()) output_layers = json::array({output_layers});
    json config = {{"name", name},
                   {"trainable", true},
                   {"layers", layers_},
                   {"input_layers", input_layers},
                   {"output_layers", output_layers}};
    if (keras3()) {
      return {{"module", "keras.src.models.functional"}, {"class_name", "Functional"},
              {"config", config},                        {"registered_name", "Functional"},
              {"build_config", {{"input_shape", nullptr}}}, {"compile_config", json::object()}};
    }
    return {{"class_name", "Functional"}, {"config", config}, {"keras_version", "2.15.0"}, {"backend", "tensorflow"}};
  }

 private:
  absl::Status Add(const std::string& class_name, const std::string& name, json config,
                   const std::vector<std::string>& from, const std::vector<int64_t>& shape) {
    if (!names_.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "two layers are named '", name, "'; a Keras model names each layer once (rename one in model.layers "
          "or model.fields)"));
    }
    json nodes = json::array();
    if (!from.empty()) {
      if (keras3()) {
        json args = json::array();
        for (const std::string& f : from) {
          const auto dtype = dtypes_.find(f);
          args.push_back({{"class_name", "__keras_tensor__"},
                          {"config",
                           {{"shape", ShapeJson(shapes_.at(f))},
                            {"dtype", dtype == dtypes_.end() ? "float32" : dtype->second},
                            {"keras_history", {f, 0, 0}}}}});
        }
        // One tensor is the call's argument; several (a merge) are one list argument.
        nodes.push_back({{"args", json::array({from.size() == 1 ? args[0] : args})}, {"kwargs", json::object()}});
      } else {
        json node = json::array();
        for (const std::string& f : from) node.push_back({f, 0, 0, json::object()});
        nodes.push_back(node);
      }
    }
    json layer = {{"module", "keras.layers"}, {"class_name", class_name}, {"config", std::move(config)},
                  {"registered_name", nullptr}, {"name", name},        {"inbound_nodes", std::move(nodes)}};
    layers_.push_back(std::move(layer));
    shapes_[name] = shape;
    return absl::OkStatus();
  }

  KerasJsonFlavor flavor_;
  json layers_ = json::array();
  std::vector<std::string> inputs_;
  std::set<std::string> names_;
  std::map<std::string, std::vector<int64_t>> shapes_;  // each layer's output, for the tensors' "shape"
  std::map<std::string, std::string> dtypes_;           // the inputs' dtypes (float32 elsewhere)
};

json ActivationName(const LayerSpec& layer) { return layer.activation.empty() ? "linear" : layer.activation; }

// The keys Dense and Conv2D share: activation, bias, initializers, no regularizers or constraints.
json WithKernelKeys(json config, const LayerSpec& layer) {
  config["activation"] = ActivationName(layer);
  config["use_bias"] = layer.use_bias;
  config["kernel_initializer"] = KerasInitializerJson(layer.kernel_initializer);
  config["bias_initializer"] = KerasInitializerJson(layer.bias_initializer);
  for (const char* key :
       {"kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint"}) {
    config[key] = nullptr;
  }
  return config;
}

absl::Status WriteLayer(const LayerSpec& layer, const std::string& from, const std::vector<int64_t>& shape,
                        KerasWriter* w) {
  if (layer.type == "dense") {
    return w->Layer("Dense", layer.name, WithKernelKeys({{"units", layer.units}}, layer), {from}, shape);
  }
  if (layer.type == "conv2d") {
    return w->Layer("Conv2D", layer.name,
                    WithKernelKeys({{"filters", layer.filters},
                                    {"kernel_size", {layer.kernel_size, layer.kernel_size}},
                                    {"strides", {1, 1}},
                                    {"padding", layer.padding},
                                    {"data_format", "channels_last"},
                                    {"dilation_rate", {1, 1}},
                                    {"groups", 1}},
                                   layer),
                    {from}, shape);
  }
  if (layer.type == "max_pool2d") {
    return w->Layer("MaxPooling2D", layer.name,
                    {{"pool_size", {layer.pool_size, layer.pool_size}},
                     {"padding", "valid"},
                     {"strides", {layer.pool_size, layer.pool_size}},
                     {"data_format", "channels_last"}},
                    {from}, shape);
  }
  if (layer.type == "flatten")
    return w->Layer("Flatten", layer.name, {{"data_format", "channels_last"}}, {from}, shape);
  if (layer.type == "relu") {
    return w->Layer("ReLU", layer.name, {{"max_value", nullptr}, {"negative_slope", 0.0}, {"threshold", 0.0}}, {from},
                    shape);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("layer '", layer.name, "' has type '", layer.type, "', which has no Keras class here"));
}

}  // namespace

absl::StatusOr<json> LayerModelAsKerasJson(const ModelSpec& model, KerasJsonFlavor flavor) {
  if (model.is_graph()) {
    return absl::InvalidArgumentError("the model is a Keras model already; its to_json() is model.keras_model");
  }
  KerasWriter w(flavor);
  std::string last;
  int64_t tower_input = model.numeric_inputs;  // CTR: the numeric features and every field's row
  for (const EmbeddingFieldSpec& f : model.fields) tower_input += f.embedding_dim;
  if (!model.is_ctr()) {
    last = "input_layer";
    RETURN_IF_ERROR(w.Input(last, model.input_shape, "float32"));
  } else {
    std::vector<std::string> merged;
    if (model.numeric_inputs > 0) {
      RETURN_IF_ERROR(w.Input("numeric", {model.numeric_inputs}, "float32"));
      merged.push_back("numeric");
    }
    for (size_t c = 0; c < model.fields.size(); ++c) RETURN_IF_ERROR(w.Input(absl::StrCat("c", c), {1}, "int32"));
    for (size_t c = 0; c < model.fields.size(); ++c) {
      const EmbeddingFieldSpec& f = model.fields[c];
      // A dynamic table's input_dim is its declared capacity, the shape its variable has.
      const int64_t rows = f.dynamic.has_value() ? f.dynamic->max_rows : f.vocabulary_size;
      RETURN_IF_ERROR(w.Layer("Embedding", f.name,
                              {{"input_dim", rows},
                               {"output_dim", f.embedding_dim},
                               {"embeddings_initializer", KerasInitializerJson(f.embeddings_initializer)},
                               {"embeddings_regularizer", nullptr},
                               {"activity_regularizer", nullptr},
                               {"embeddings_constraint", nullptr},
                               {"mask_zero", false}},
                              {absl::StrCat("c", c)}, {1, f.embedding_dim}));
    }
    // Flatten's automatic names, after any the tower could take (the tower's layers keep theirs).
    std::set<std::string> taken;
    for (const LayerSpec& layer : model.layers) taken.insert(layer.name);
    int next = 0;
    for (const EmbeddingFieldSpec& f : model.fields) {
      std::string name;
      do {
        name = next == 0 ? "flatten" : absl::StrCat("flatten_", next);
        ++next;
      } while (taken.count(name) > 0);
      RETURN_IF_ERROR(w.Layer("Flatten", name, {{"data_format", "channels_last"}}, {f.name}, {f.embedding_dim}));
      merged.push_back(name);
    }
    last = merged[0];
    if (merged.size() > 1) {
      std::string name = "concatenate";
      for (int k = 1; taken.count(name) > 0; ++k) name = absl::StrCat("concatenate_", k);
      RETURN_IF_ERROR(w.Layer("Concatenate", name, {{"axis", -1}}, merged, {tower_input}));
      last = name;
    }
  }
  ModelSpec tower;  // the layers' output shapes, from the tower's input
  tower.input_shape = model.is_ctr() ? std::vector<int64_t>{tower_input} : model.input_shape;
  tower.layers = model.layers;
  ASSIGN_OR_RETURN(const std::vector<std::vector<int64_t>> shapes, LayerOutputShapes(tower));
  for (size_t i = 0; i < model.layers.size(); ++i) {
    RETURN_IF_ERROR(WriteLayer(model.layers[i], last, shapes[i], &w));
    last = model.layers[i].name;
  }
  return w.Model("pstrain_layer_model", last);
}

absl::StatusOr<ModelSpec> LayerModelAsGraph(const ModelSpec& model, KerasJsonFlavor flavor) {
  if (model.is_graph()) return model;
  ASSIGN_OR_RETURN(json doc, LayerModelAsKerasJson(model, flavor));
  ModelSpec out;
  out.loss = model.loss;
  for (const EmbeddingFieldSpec& f : model.fields) {
    if (f.dynamic.has_value()) out.keras_dynamic_tables[f.name] = *f.dynamic;
  }
  RETURN_IF_ERROR(SetKerasModel(doc, "the layer list's Keras model", &out));
  out.from_logits = true;  // a layer list's output is logits, whatever its last activation
  for (size_t c = 0; c < out.fields.size() && c < model.fields.size(); ++c)
    out.fields[c].combiner = model.fields[c].combiner;
  return out;
}

}  // namespace pstrain
