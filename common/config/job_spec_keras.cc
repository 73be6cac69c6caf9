// The Keras part of a job spec's model: a model read from a Keras to_json() ("keras_model" inline,
// "keras_json" a file read by LoadJobSpec, or --model_json), with its loss. See ModelSpec::graph.
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/config/job_spec_parse.h"
#include "common/config/json_util.h"
#include "common/graph/keras_json.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"

namespace pstrain {
namespace internal_job_spec {
namespace {

using nlohmann::json;

// A model fed ids: float inputs of rank 1 take the numeric features and each integer input feeds
// Embedding layers only (several on one input need one input_dim: the ids index all of them, and
// are all dynamic tables or none, since a dynamic table takes the ids whole).
absl::Status SetCtrInputs(const ModelGraph& graph, const std::string& what, ModelSpec* out) {
  std::set<std::string> unused_dynamic;
  for (const auto& [layer, table] : out->keras_dynamic_tables) unused_dynamic.insert(layer);
  std::vector<std::vector<int>> consumers(graph.layers.size());
  for (size_t i = 0; i < graph.layers.size(); ++i) {
    for (int j : graph.layers[i].inputs) consumers[j].push_back(static_cast<int>(i));
  }
  for (int in : graph.inputs) {
    const GraphLayerSpec& input = graph.layers[in];
    if (!input.config.int_input) {
      if (input.output_shape.size() != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": float input '", input.name, "' has shape ", ShapeString(input.output_shape),
            "; in a model fed ids the float inputs take the numeric features and must be vectors, e.g. (13,)"));
      }
      out->numeric_inputs += input.output_shape[0];
      continue;
    }
    if (input.output_shape.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": integer input '", input.name, "' has shape ",
                                                     ShapeString(input.output_shape),
                                                     "; give ids as (k,): one id per field, k fields"));
    }
    std::vector<std::string> tables;
    const GraphLayerSpec* first = nullptr;
    for (int c : consumers[in]) {
      const GraphLayerSpec& layer = graph.layers[c];
      if (layer.kind != LayerKind::kEmbedding) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": integer input '", input.name, "' feeds layer '", layer.name, "' (", layer.class_name,
            "); ids may feed only Embedding layers (their tables are the ps's sparse variables)"));
      }
      if (first != nullptr && layer.config.input_dim != first->config.input_dim) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": integer input '", input.name, "' feeds Embedding layers '", first->name, "' (input_dim ",
            first->config.input_dim, ") and '", layer.name, "' (input_dim ", layer.config.input_dim,
            "); the Embedding layers of one input need the same input_dim, since its ids index all of them"));
      }
      const bool dynamic = out->keras_dynamic_tables.count(layer.name) > 0;
      if (first != nullptr && dynamic != (out->keras_dynamic_tables.count(first->name) > 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": integer input '", input.name, "' feeds Embedding layers '", first->name, "' and '", layer.name,
            "', of which only one is in model.dynamic_tables; the ids of one input index all its tables, so make "
            "both dynamic or neither"));
      }
      if (first == nullptr) first = &layer;
      unused_dynamic.erase(layer.name);
      tables.push_back(layer.name);
    }
    if (first == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": integer input '", input.name, "' feeds no layer"));
    }
    const int table = graph.FindVariable(first->name + "/embeddings");
    const int64_t fields = input.output_shape.empty() ? 1 : input.output_shape[0];
    for (int64_t k = 0; k < fields; ++k) {
      EmbeddingFieldSpec f;
      f.name = first->name;
      f.vocabulary_size = first->config.input_dim;
      f.embedding_dim = first->config.output_dim;
      if (table >= 0) f.embeddings_initializer = graph.variables[table].initializer;
      if (auto d = out->keras_dynamic_tables.find(first->name); d != out->keras_dynamic_tables.end()) {
        f.vocabulary_size = 0;  // ids taken whole, placed by hash: input_dim does not bound them
        f.dynamic = d->second;
      }
      f.tables = tables;
      out->fields.push_back(std::move(f));
    }
  }
  if (!unused_dynamic.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": model.dynamic_tables names '", *unused_dynamic.begin(),
        "', which is not an Embedding layer fed by an integer input of the model; name such a layer"));
  }
  out->input_shape = {out->numeric_inputs};
  return absl::OkStatus();
}

// The model's inputs as the job's dataset gives them: one float tensor per example, or (a model
// with integer inputs) the numeric features and categorical ids of CTR data.
absl::Status SetInputs(const ModelGraph& graph, const std::string& what, ModelSpec* out) {
  bool ids = false;
  for (int in : graph.inputs) ids |= graph.layers[in].config.int_input;
  if (ids) return SetCtrInputs(graph, what, out);
  if (!out->keras_dynamic_tables.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": model.dynamic_tables names '", out->keras_dynamic_tables.begin()->first,
        "', but the model has no integer (id) input; dynamic tables are Embedding layers fed by ids"));
  }
  if (graph.inputs.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": the model has ", graph.inputs.size(),
        " float inputs; a dataset of images or feature rows gives one float tensor per example, so the model "
        "must have one input (models with integer id inputs take CTR data: numeric features and ids)"));
  }
  out->input_shape = graph.layers[graph.inputs[0]].output_shape;
  return absl::OkStatus();
}

}  // namespace

bool HasKerasModel(JsonFields& model) {
  return model.Find("keras_model") != nullptr || model.Find("keras_json") != nullptr;
}

absl::Status ParseKerasModel(JsonFields& f, ModelSpec* spec) {
  for (const char* key : {"input_shape", "layers", "fields", "numeric_inputs"}) {
    if (f.Find(key) != nullptr) {
      return f.Invalid(key, "must not be given with a Keras model (keras_model / keras_json): the Keras model "
                            "defines the layers and the input");
    }
  }
  if (f.Find("keras_json") != nullptr) {
    return f.Invalid("keras_json",
                     "is a file path, read only when the job spec is loaded from a file (pstrain reads it "
                     "there and carries the model inline as keras_model)");
  }
  spec->keras_dynamic_tables.clear();
  if (const json* dynamic = f.Find("dynamic_tables"); dynamic != nullptr) {
    RETURN_IF_ERROR(JsonFields::RequireObject(*dynamic, f.Where("dynamic_tables"), kPrefix));
    for (const auto& [layer, table] : dynamic->items()) {
      ASSIGN_OR_RETURN(spec->keras_dynamic_tables[layer],
                       ParseDynamicTable(table, absl::StrCat(f.Where("dynamic_tables"), ".", layer)));
    }
  }
  const json* doc = f.Find("keras_model");
  RETURN_IF_ERROR(SetKerasModel(*doc, kPrefix + f.Where("keras_model"), spec));
  ASSIGN_OR_RETURN(spec->loss, f.String("loss", spec->is_ctr() ? "binary_crossentropy" : "sparse_categorical_crossentropy",
                                        {"sparse_categorical_crossentropy", "binary_crossentropy", "mse"}));
  ASSIGN_OR_RETURN(spec->from_logits, f.Bool("from_logits", spec->from_logits));  // inferred unless given
  return absl::OkStatus();
}

absl::Status InlineKerasJson(const std::string& spec_path, json* doc) {
  if (!doc->is_object() || !doc->contains("model") || !(*doc)["model"].is_object()) return absl::OkStatus();
  json& model = (*doc)["model"];
  if (!model.contains("keras_json")) return absl::OkStatus();
  if (!model["keras_json"].is_string() || model["keras_json"].get<std::string>().empty()) {
    return Invalid("model.keras_json", "must be the path of a Keras model's to_json() file");
  }
  if (model.contains("keras_model")) return Invalid("model.keras_json", "and model.keras_model are both given; keep one");
  std::string path = model["keras_json"].get<std::string>();
  const size_t slash = spec_path.rfind('/');
  if (path[0] != '/' && slash != std::string::npos) path = spec_path.substr(0, slash + 1) + path;
  absl::StatusOr<json> keras = ReadJsonFile(path);
  if (!keras.ok()) {
    return absl::Status(keras.status().code(),
                        absl::StrCat(kPrefix, "model.keras_json: ", keras.status().message()));
  }
  model.erase("keras_json");
  model["keras_model"] = *std::move(keras);
  return absl::OkStatus();
}

absl::Status CheckKerasModelData(const JobSpec& spec) {
  const ModelSpec& model = spec.model;
  if (model.is_ctr() != IsCtrDataset(spec.data.dataset)) {
    return Invalid("data.dataset", model.is_ctr()
                                       ? "must be criteo or tfrecord for a Keras model with integer (id) inputs"
                                       : spec.data.dataset + " feeds models with id inputs (CTR); a Keras model "
                                                             "without them is trained on fashion_mnist, csv or "
                                                             "synthetic_linear data");
  }
  if (model.is_ctr() && model.loss != "binary_crossentropy") {
    return Invalid("model.loss", "must be binary_crossentropy for a Keras model with integer (id) inputs: it "
                                 "trains on CTR data, whose labels are 0 or 1");
  }
  return absl::OkStatus();
}

void KerasModelToJson(const ModelSpec& spec, json* model) {
  if (!spec.is_graph()) return;
  *model = json{{"keras_model", spec.keras_model}, {"loss", spec.loss}, {"from_logits", spec.from_logits}};
  if (!spec.keras_dynamic_tables.empty()) {
    json& tables = (*model)["dynamic_tables"];
    for (const auto& [layer, table] : spec.keras_dynamic_tables) tables[layer] = DynamicTableToJson(table);
  }
}

}  // namespace internal_job_spec

absl::Status SetKerasModel(const nlohmann::json& doc, const std::string& what, ModelSpec* model) {
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a Keras model's to_json() document (an object)"));
  }
  ASSIGN_OR_RETURN(ModelGraph graph, ReadKerasModelJson(doc.dump(), what));
  ModelSpec out;
  out.loss = model->loss;
  out.keras_dynamic_tables = model->keras_dynamic_tables;  // the job's, applied to this model's layers
  RETURN_IF_ERROR(internal_job_spec::SetInputs(graph, what, &out));
  // A model that ends in softmax or sigmoid gives probabilities; any other output is logits.
  const GraphLayerSpec& last = graph.layers[graph.output];
  const ActivationKind act = last.config.activation;
  const bool probabilities = (last.kind == LayerKind::kDense || last.kind == LayerKind::kActivation) &&
                             (act == ActivationKind::kSoftmax || act == ActivationKind::kSigmoid);
  out.from_logits = !probabilities;
  out.keras_model = doc;
  out.graph = std::make_shared<const ModelGraph>(std::move(graph));
  *model = std::move(out);
  return absl::OkStatus();
}

absl::Status OverrideModelJson(const std::string& path, const std::string& flag, JobSpec* job) {
  if (path.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  const std::string what = absl::StrCat(flag, "=", path);
  JobSpec candidate = *job;
  RETURN_IF_ERROR(SetKerasModel(doc, what, &candidate.model));  // keeps the job's loss
  if (absl::Status fits = internal_job_spec::CheckKerasModelData(candidate); !fits.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the model does not fit job \"", job->name, "\" (",
                                                   job->data.dataset, " data, loss ", job->model.loss, "): ",
                                                   fits.message()));
  }
  if (candidate.data.dataset == "tfrecord") {
    RETURN_IF_ERROR(internal_job_spec::CheckTfExampleFeatures(candidate));
    internal_job_spec::ApplyTfExampleBags(&candidate);  // the new model's bag fields take their combiners
  }
  job->model = std::move(candidate.model);
  return absl::OkStatus();
}

}  // namespace pstrain
