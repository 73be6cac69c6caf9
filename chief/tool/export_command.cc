#include "chief/tool/export_command.h"

#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "chief/evaluation/checkpoint_evaluator.h"
#include "common/config/command_line.h"
#include "common/config/json_util.h"
#include "common/graph/keras_weights.h"
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
      {"out", "", "the file to write (keras: name it *.weights.h5, as Keras 3 requires)"},
      {"memory_budget_bytes", "0", "most bytes one checkpoint variable may take (0: half of this host's memory)"},
  };
  return *flags;
}

constexpr char kSummary[] = "write a checkpoint of a Keras model as Keras weights (.weights.h5, .h5) or ONNX";

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
    return absl::InvalidArgumentError(absl::StrCat(
        dir, " holds job \"", job.name, "\", whose model is a layer list, not a Keras model: export writes models "
        "that came from Keras (model.keras_model, model.keras_json or --model_json)"));
  }
  ASSIGN_OR_RETURN(std::vector<VariableSpec> variables, ModelVariables(job.model));
  for (const VariableSpec& v : variables) {
    // A Keras Embedding holds input_dim rows by position; a dynamic table holds rows by key.
    if (v.dynamic.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(
          dir, ": table ", v.name, " is a dynamic table (rows by 64-bit key, not by position), which export "
          "cannot write as Keras or ONNX weights yet; `pstrain evaluate` and `pstrain inspect` read it"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<Tensor> params, LoadModelVariables(env, dir, index, job.model, max_bytes));
  FloatTensorMap weights;
  for (size_t i = 0; i < variables.size(); ++i) {
    FloatTensor& w = weights[variables[i].name];
    w.shape = variables[i].shape;
    w.values.assign(params[i].data<float>(), params[i].data<float>() + params[i].num_elements());
  }
  const ModelGraph& graph = *job.model.graph;
  if (format == "onnx") {
    OnnxExportOptions options;
    options.doc_string = absl::StrCat("job ", job.name, ", checkpoint ", dir);
    RETURN_IF_ERROR(WriteOnnxFile(env, out, graph, weights, options));
    *written = absl::StrCat(out, " (ONNX, ", variables.size(), " variables, from ", dir, ")");
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(WriteKerasWeights(graph, weights,
                                    format == "keras" ? KerasWeightsFormat::kKeras3 : KerasWeightsFormat::kKeras2, out));
  // The model itself, for keras.models.model_from_json beside load_weights.
  const std::string json_path = absl::StrCat(out, ".json");
  RETURN_IF_ERROR(env->WriteFileAtomic(json_path, job.model.keras_model.dump()));
  *written = absl::StrCat(out, " (", format == "keras" ? "Keras 3" : "Keras 2", " weights, ", variables.size(),
                          " variables, from ", dir, ") and its model ", json_path);
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
