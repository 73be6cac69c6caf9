#include "chief/tool/export_command.h"

#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "chief/evaluation/checkpoint_evaluator.h"
#include "chief/tool/keras_dynamic_export.h"
#include "common/config/command_line.h"
#include "common/config/json_util.h"
#include "common/graph/keras_json.h"
#include "common/graph/keras_weights.h"
#include "common/graph/layer_model_keras.h"
#include "common/graph/npy_int64.h"
#include "common/graph/onnx_export.h"
#include "common/plan/memory_budget.h"
#include "common/plan/model_variables.h"
#include "common/platform/exit_codes.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

const std::vector<FlagDef>& ExportFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"checkpoint", "", "a checkpoint directory (model_dir/ckpt-N), or a model dir for its newest checkpoint"},
      {"format", "keras", "keras (Keras 3 .weights.h5), keras2 (Keras 2 legacy .h5 weights) or onnx"},
      {"out", "", "the file to write (keras: name it *.weights.h5, as Keras 3 requires); beside it OUT.json (the "
              "model) and, for dynamic tables, OUT.<input>.keys.npy (the keys of an id input's rows)"},
      {"memory_budget_bytes", "0", "most bytes one checkpoint variable may take (0: half of this host's memory)"},
  };
  return *flags;
}

constexpr char kSummary[] =
    "write a checkpoint as Keras weights (.weights.h5, .h5) and its Keras model, or as ONNX (a preset's or layer "
    "list's model is written as the Keras model with its variables)";

absl::Status Export(Env* env, const CommandLine& cl, std::string* written) {
  const std::string format = cl.Get("format"), out = cl.Get("out");
  if (format != "keras" && format != "keras2" && format != "onnx") {
    return absl::InvalidArgumentError(absl::StrCat("--format=", format, " is not a format; use keras, keras2 or onnx"));
  }
  if (out.empty()) return absl::InvalidArgumentError("give --out=PATH, the file to write");
  if (format == "keras" && !absl::EndsWith(out, ".weights.h5")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--out=", out, ": Keras 3 loads weights only from a file named *.weights.h5; name it so (or use --format=keras2)"));
  }
  if (cl.Get("checkpoint").empty()) return absl::InvalidArgumentError("give --checkpoint=DIR (a model_dir/ckpt-N directory)");
  ASSIGN_OR_RETURN(int64_t budget, cl.GetInt("memory_budget_bytes", IntAtLeast(0)));
  ASSIGN_OR_RETURN(const int64_t max_bytes, MemoryBudgetBytes(env, budget));
  std::vector<std::string> warnings;
  ASSIGN_OR_RETURN(const std::string dir, ResolveCheckpoint(env, cl.Get("checkpoint"), &warnings));
  for (const std::string& w : warnings) std::cerr << "pstrain export: " << w << "\n";
  ASSIGN_OR_RETURN(CheckpointIndex index, ReadCheckpointIndex(env, dir));
  ASSIGN_OR_RETURN(JobSpec job, JobSpecOfCheckpoint(index));
  if (!job.model.is_graph()) {
    // A layer list (a preset) is written as the Keras model with its variables (layer_model_keras.h).
    ASSIGN_OR_RETURN(job.model,
                     LayerModelAsGraph(job.model, format == "keras2" ? KerasJsonFlavor::kKeras2 : KerasJsonFlavor::kKeras3));
  }
  ASSIGN_OR_RETURN(std::vector<VariableSpec> variables, ModelVariables(job.model));
  ASSIGN_OR_RETURN(std::vector<Tensor> params, LoadModelVariables(env, dir, index, job.model, max_bytes));
  FloatTensorMap weights;
  bool dynamic = false;
  for (size_t i = 0; i < variables.size(); ++i) {
    if (variables[i].dynamic.has_value()) {  // written below, with its keys
      dynamic = true;
      continue;
    }
    FloatTensor& w = weights[variables[i].name];
    w.shape = variables[i].shape;
    w.values.assign(params[i].data<float>(), params[i].data<float>() + params[i].num_elements());
  }
  const ModelGraph* graph = job.model.graph.get();
  if (format == "onnx") {
    if (dynamic) {
      // ONNX's standard operators have no lookup of a key among a table's keys.
      return absl::FailedPreconditionError(absl::StrCat(
          dir, " holds dynamic tables (rows by 64-bit key), which an ONNX model cannot look up; export them with "
          "--format=keras or keras2, which write each input's keys beside the weights"));
    }
    OnnxExportOptions options;
    options.doc_string = absl::StrCat("job ", job.name, ", checkpoint ", dir);
    RETURN_IF_ERROR(WriteOnnxFile(env, out, *graph, weights, options));
    *written = absl::StrCat(out, " (ONNX, ", variables.size(), " variables, from ", dir, ")");
    return absl::OkStatus();
  }
  nlohmann::json model = job.model.keras_model;
  ModelGraph export_graph;
  std::string keys_written;
  if (dynamic) {
    // Each dynamic table becomes an Embedding of its input's keys + 1 rows; the keys go beside it.
    ASSIGN_OR_RETURN(KerasDynamicExport tables, ReadDynamicTablesForKeras(env, dir, index, job, max_bytes));
    for (auto& [name, w] : tables.tables) weights[name] = std::move(w);
    RETURN_IF_ERROR(SetEmbeddingInputDims(tables.input_dims, &model));
    ASSIGN_OR_RETURN(export_graph, ReadKerasModelJson(model.dump(), "the exported model"));
    graph = &export_graph;
    for (const DynamicInputKeys& input : tables.inputs) {
      const std::string path = absl::StrCat(out, ".", input.input, ".keys.npy");
      RETURN_IF_ERROR(env->WriteFileAtomic(path, NpyInt64Vector(input.keys)));
      absl::StrAppend(&keys_written, ", ", path, " (", input.keys.size(), " keys)");
    }
  }
  RETURN_IF_ERROR(WriteKerasWeights(*graph, weights,
                                    format == "keras" ? KerasWeightsFormat::kKeras3 : KerasWeightsFormat::kKeras2, out));
  // The model itself, for keras.models.model_from_json beside load_weights.
  const std::string json_path = absl::StrCat(out, ".json");
  RETURN_IF_ERROR(env->WriteFileAtomic(json_path, model.dump()));
  *written = absl::StrCat(out, " (", format == "keras" ? "Keras 3" : "Keras 2", " weights, ", variables.size(),
                          " variables, from ", dir, ") and its model ", json_path, keys_written);
  return absl::OkStatus();
}

}  // namespace

int ExportMain(Env* env, int argc, char** argv) {
  absl::StatusOr<CommandLine> cl = CommandLine::Parse("export", argc, argv, 2, ExportFlags());
  if (!cl.ok()) {
    std::cerr << "pstrain export: " << cl.status().message() << "\n";
    return kExitBadConfiguration;
  }
  if (cl->help()) {
    std::cout << FlagUsage("export", kSummary, ExportFlags());
    return kExitOk;
  }
  std::string written;
  absl::Status s = Export(env, *cl, &written);
  if (!s.ok()) {
    std::cerr << "pstrain export: " << s.message() << "\n";
    return ExitCodeFor(s);
  }
  std::cout << "pstrain export: wrote " << written << "\n";
  return kExitOk;
}

}  // namespace pstrain
