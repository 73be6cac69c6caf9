#include "common/graph/initial_weights.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "common/graph/npy_int64.h"
#include "common/plan/model_variables.h"
#include "common/platform/env.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"

namespace pstrain {
namespace {

// The name of the layer feeding Embedding variable `var` (its id input).
std::string IdInputOf(const ModelGraph& graph, const std::string& var) {
  for (const GraphVariableSpec& v : graph.variables) {
    if (v.name != var) continue;
    const GraphLayerSpec& layer = graph.layers[v.layer];
    return layer.inputs.empty() ? "" : graph.layers[layer.inputs[0]].name;
  }
  return "";
}

// Gives dynamic table `var` its keys and keeps the rows that have one (see the header).
absl::Status KeyDynamicTable(Env* env, const std::string& flag, const std::string& path, const ModelGraph& graph,
                             const VariableSpec& var, InitialWeights* out) {
  WeightValue& value = out->values[var.name];
  const int64_t rows = value.shape[0], dim = value.shape[1];
  const std::string layer = var.name.substr(0, var.name.rfind('/'));
  const std::string input = IdInputOf(graph, var.name);
  const std::string keys_path = absl::StrCat(path, ".", input, ".keys.npy");
  std::vector<int64_t> keys;
  if (!input.empty() && env->FileExists(keys_path)) {
    ASSIGN_OR_RETURN(std::string bytes, env->ReadFile(keys_path));
    absl::StatusOr<std::vector<int64_t>> read = ParseNpyIntVector(bytes, keys_path);
    if (!read.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, read.status().message()));
    keys = *std::move(read);
    if (static_cast<int64_t>(keys.size()) + 1 != rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, "layer '", layer, "' has ", rows, " rows but ", keys_path, " holds ", keys.size(),
          " keys; want one key per row after row 0 (as pstrain export writes them), or remove the keys file to key "
          "row i as id i"));
    }
    value.values.erase(value.values.begin(), value.values.begin() + dim);  // row 0: export's row for unknown ids
    out->key_sources[var.name] = absl::StrCat("the keys of ", keys_path);
  } else {
    keys.resize(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) keys[i] = i;
    out->key_sources[var.name] =
        absl::StrCat("ids 0..", rows - 1, " (row i is id i; no ", keys_path, " beside the file)");
  }
  std::set<int64_t> seen;
  for (int64_t k : keys) {
    if (!seen.insert(k).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, keys_path, " holds key ", k, " twice; each key may have one row"));
    }
  }
  const int64_t max_rows = var.dynamic->max_rows;
  if (static_cast<int64_t>(keys.size()) > max_rows) {
    return absl::InvalidArgumentError(absl::StrCat(flag, "layer '", layer, "' (a dynamic table of max_rows ", max_rows,
                                                   ") would start with ", keys.size(),
                                                   " rows from the file; raise its max_rows in model.dynamic_tables"));
  }
  value.shape[0] = static_cast<int64_t>(keys.size());
  out->dynamic_keys[var.name] = std::move(keys);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<InitialWeights> ReadInitialWeights(Env* env, const JobSpec& job, const std::string& path) {
  const std::string flag = absl::StrCat("--init_from=", path, ": ");
  if (!job.model.is_graph()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "job \"", job.name, "\" has no Keras model (give --model_json or model.keras_json)"));
  }
  ASSIGN_OR_RETURN(std::vector<VariableSpec> variables, ModelVariables(job.model));
  std::set<std::string> dynamic;
  for (const VariableSpec& var : variables) {
    if (var.dynamic.has_value()) dynamic.insert(var.name);
  }
  absl::StatusOr<NamedWeights> read = ReadKerasWeights(*job.model.graph, path, dynamic);
  if (!read.ok()) return absl::Status(read.status().code(), absl::StrCat(flag, read.status().message()));
  InitialWeights out;
  out.values = *std::move(read);
  // ReadKerasWeights matches the file against the graph layer by layer; this checks the result
  // against the variables the job plans, so no variable starts from anything but the file.
  for (const VariableSpec& var : variables) {
    auto it = out.values.find(var.name);
    if (it == out.values.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, "the file has no value for variable ", var.name, " (shape ", ShapeString(var.shape), ")"));
    }
    const std::vector<int64_t>& shape = it->second.shape;
    const bool fits = var.dynamic.has_value()
                          ? shape.size() == 2 && var.shape.size() == 2 && shape[1] == var.shape[1] && shape[0] >= 1
                          : shape == var.shape;
    if (!fits || static_cast<int64_t>(it->second.values.size()) != NumElements(shape)) {
      return absl::InvalidArgumentError(absl::StrCat(flag, "variable ", var.name, " has shape ", ShapeString(shape),
                                                     " in the file; the model's is ", ShapeString(var.shape)));
    }
    if (var.dynamic.has_value()) RETURN_IF_ERROR(KeyDynamicTable(env, flag, path, *job.model.graph, var, &out));
  }
  return out;
}

}  // namespace pstrain
