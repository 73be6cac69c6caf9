#include "common/graph/initial_weights.h"

#include "absl/strings/str_cat.h"
#include "common/plan/model_variables.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"

namespace pstrain {

absl::StatusOr<NamedWeights> ReadInitialWeights(const JobSpec& job, const std::string& path) {
  const std::string flag = absl::StrCat("--init_from=", path, ": ");
  if (!job.model.is_graph()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "job \"", job.name, "\" has no Keras model (give --model_json or model.keras_json)"));
  }
  if (!job.model.keras_dynamic_tables.empty()) {
    // A Keras Embedding's rows are by position; a dynamic table's by key, made on first push.
    return absl::InvalidArgumentError(absl::StrCat(
        flag, "layer '", job.model.keras_dynamic_tables.begin()->first, "' is a dynamic table (model.dynamic_tables), whose rows are made on first use, "
        "not read from Keras weights; drop it from model.dynamic_tables to start it from the file"));
  }
  absl::StatusOr<NamedWeights> read = ReadKerasWeights(*job.model.graph, path);
  if (!read.ok()) return absl::Status(read.status().code(), absl::StrCat(flag, read.status().message()));
  // ReadKerasWeights matches the file against the graph layer by layer; this checks the result
  // against the variables the job plans, so no variable starts from anything but the file.
  ASSIGN_OR_RETURN(std::vector<VariableSpec> variables, ModelVariables(job.model));
  for (const VariableSpec& var : variables) {
    auto it = read->find(var.name);
    if (it == read->end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, "the file has no value for variable ", var.name, " (shape ", ShapeString(var.shape), ")"));
    }
    if (it->second.shape != var.shape || static_cast<int64_t>(it->second.values.size()) != NumElements(var.shape)) {
      return absl::InvalidArgumentError(absl::StrCat(flag, "variable ", var.name, " has shape ",
                                                     ShapeString(it->second.shape), " in the file; the model's is ",
                                                     ShapeString(var.shape)));
    }
  }
  return read;
}

}  // namespace pstrain
