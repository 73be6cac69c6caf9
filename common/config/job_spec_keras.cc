// The Keras part of a job spec's model: a model read from a Keras to_json() ("keras_model" inline,
// "keras_json" a file read by LoadJobSpec, or --model_json), with its loss. See ModelSpec::graph.
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/config/job_spec_parse.h"
#include "common/config/json_util.h"
#include "common/graph/keras_json.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace internal_job_spec {
namespace {

using nlohmann::json;

// A Keras model gets its inputs from the job's dataset, whose examples are one float tensor.
absl::Status CheckOneFloatInput(const ModelGraph& graph, const std::string& what) {
  if (graph.inputs.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": the model has ", graph.inputs.size(),
        " inputs; a job's dataset gives one float tensor per example, so the model must have one input"));
  }
  const GraphLayerSpec& input = graph.layers[graph.inputs[0]];
  if (input.config.int_input) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": input '", input.name,
                     "' is an integer input (ids); the job's dataset gives float features. Models fed ids "
                     "(Embedding layers on categorical data) are not trainable from a job spec yet"));
  }
  for (const GraphVariableSpec& v : graph.variables) {
    if (!v.trainable) {
      const GraphLayerSpec& layer = graph.layers[v.layer];
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": layer '", layer.name, "' (", layer.class_name, ") has the non-trainable variable '", v.name,
          "'; the ps has no update for moving statistics yet, so BatchNormalization is not trainable here "
          "(LayerNormalization is)"));
    }
  }
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
  const json* doc = f.Find("keras_model");
  RETURN_IF_ERROR(SetKerasModel(*doc, kPrefix + f.Where("keras_model"), spec));
  ASSIGN_OR_RETURN(spec->loss, f.String("loss", "sparse_categorical_crossentropy",
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

void KerasModelToJson(const ModelSpec& spec, json* model) {
  if (!spec.is_graph()) return;
  *model = json{{"keras_model", spec.keras_model}, {"loss", spec.loss}, {"from_logits", spec.from_logits}};
}

}  // namespace internal_job_spec

absl::Status SetKerasModel(const nlohmann::json& doc, const std::string& what, ModelSpec* model) {
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a Keras model's to_json() document (an object)"));
  }
  ASSIGN_OR_RETURN(ModelGraph graph, ReadKerasModelJson(doc.dump(), what));
  RETURN_IF_ERROR(internal_job_spec::CheckOneFloatInput(graph, what));
  ModelSpec out;
  out.loss = model->loss;
  out.input_shape = graph.layers[graph.inputs[0]].output_shape;
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
  if (job->model.is_ctr()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": job \"", job->name, "\" is a CTR job (criteo or tfrecord data); a Keras model is trained on "
                     "fashion_mnist, csv or synthetic_linear data for now"));
  }
  ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  return SetKerasModel(doc, absl::StrCat(flag, "=", path), &job->model);  // keeps the job's loss
}

}  // namespace pstrain
