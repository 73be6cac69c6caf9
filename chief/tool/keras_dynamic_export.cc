#include "chief/tool/keras_dynamic_export.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "chief/evaluation/saved_dynamic_table.h"
#include "common/checkpoint/dynamic_shard_files.h"
#include "common/graph/model_graph.h"
#include "common/plan/model_variables.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"

namespace pstrain {
namespace {

// The dynamic Embedding layers each integer input feeds, in the model's input order.
std::vector<std::pair<std::string, std::vector<std::string>>> DynamicLayersByInput(const JobSpec& job) {
  const ModelGraph& graph = *job.model.graph;
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (int in : graph.inputs) {
    std::vector<std::string> layers;
    for (const GraphLayerSpec& layer : graph.layers) {
      if (layer.kind == LayerKind::kEmbedding && job.model.keras_dynamic_tables.count(layer.name) > 0 &&
          std::find(layer.inputs.begin(), layer.inputs.end(), in) != layer.inputs.end()) {
        layers.push_back(layer.name);
      }
    }
    if (!layers.empty()) out.emplace_back(graph.layers[in].name, std::move(layers));
  }
  return out;
}

}  // namespace

absl::StatusOr<KerasDynamicExport> ReadDynamicTablesForKeras(Env* env, const std::string& dir,
                                                             const CheckpointIndex& index, const JobSpec& job,
                                                             int64_t max_bytes) {
  KerasDynamicExport out;
  if (!job.model.is_graph()) return out;
  ASSIGN_OR_RETURN(std::vector<VariableSpec> variables, ModelVariables(job.model));
  auto variable = [&variables](const std::string& name) -> const VariableSpec* {
    for (const VariableSpec& v : variables) {
      if (v.name == name && v.dynamic.has_value()) return &v;
    }
    return nullptr;
  };
  std::map<std::string, int64_t> saved_rows;  // by table, over its shards
  ASSIGN_OR_RETURN(std::vector<SavedDynamicTableFiles> files, GroupDynamicShards(index.dynamic_shards));
  for (const SavedDynamicTableFiles& f : files) saved_rows[f.table_name] = f.rows;
  for (const auto& [input, layers] : DynamicLayersByInput(job)) {
    // The union can hold every row of every table of the input: bound it before reading any.
    int64_t rows = 1;
    for (const std::string& layer : layers) rows += saved_rows[layer + "/embeddings"];
    std::vector<SavedDynamicTable> tables;
    std::set<int64_t> keys;
    for (const std::string& layer : layers) {
      const VariableSpec* var = variable(layer + "/embeddings");
      if (var == nullptr) return absl::InternalError(absl::StrCat("no dynamic variable for layer ", layer));
      const int64_t bytes = rows * var->shape[1] * static_cast<int64_t>(sizeof(float));
      if (bytes > max_bytes) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "dynamic table ", var->name, " in ", dir, " may take ", rows, " rows x ", var->shape[1], " floats = ",
            bytes, " bytes as a Keras Embedding, more than the memory budget of ", max_bytes,
            " bytes; raise --memory_budget_bytes on a host with the memory"));
      }
      ASSIGN_OR_RETURN(SavedDynamicTable table, SavedDynamicTable::Read(env, dir, *var, job.seed));
      keys.insert(table.keys().begin(), table.keys().end());
      tables.push_back(std::move(table));
    }
    DynamicInputKeys input_keys{input, std::vector<int64_t>(keys.begin(), keys.end())};
    const int64_t n = static_cast<int64_t>(input_keys.keys.size());
    for (size_t t = 0; t < layers.size(); ++t) {
      Tensor rows_of_keys;
      tables[t].Lookup(input_keys.keys, &rows_of_keys);
      const int64_t dim = tables[t].dim();
      FloatTensor& w = out.tables[layers[t] + "/embeddings"];
      w.shape = {n + 1, dim};
      w.values.assign(dim, 0.0f);  // row 0: ids the list lacks
      w.values.insert(w.values.end(), rows_of_keys.data<float>(), rows_of_keys.data<float>() + n * dim);
      out.input_dims[layers[t]] = n + 1;
    }
    out.inputs.push_back(std::move(input_keys));
  }
  return out;
}

}  // namespace pstrain
