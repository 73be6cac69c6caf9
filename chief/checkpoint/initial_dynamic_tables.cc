#include "chief/checkpoint/initial_dynamic_tables.h"

#include "absl/strings/str_cat.h"
#include "common/plan/dynamic_key_owner.h"
#include "common/plan/dynamic_shards.h"
#include "common/plan/model_variables.h"
#include "common/plan/optimizer_proto.h"
#include "common/platform/status_macros.h"
#include "ps/store/dynamic_table_state.h"
#include "ps/store/optimizer.h"
#include "ps/store/ps_server.h"

namespace pstrain {

const std::string* InitialDynamicFiles::BytesOf(const std::string& variable) const {
  auto it = files.find(DynamicShardFileName(variable, 0, 1));
  return it == files.end() ? nullptr : &it->second;
}

SavedDynamicShard OneFileDynamicShard(const std::string& table, int64_t rows) {
  SavedDynamicShard saved;
  saved.set_shard_name(DynamicShardName(table, 0, 1));
  saved.set_table_name(table);
  saved.set_shard_index(0);
  saved.set_num_shards(1);
  saved.set_file(DynamicShardFileName(table, 0, 1));
  saved.set_rows(rows);
  return saved;
}

absl::StatusOr<InitialDynamicFiles> InitialDynamicTableFiles(const JobSpec& job, const InitialWeights& weights,
                                                             int num_ps) {
  InitialDynamicFiles out;
  if (weights.dynamic_keys.empty()) return out;
  ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer, Optimizer::Create(OptimizerProtoFromSpec(job.optimizer)));
  std::vector<float> slots;
  for (size_t s = 0; s < optimizer->SlotNames().size(); ++s) slots.push_back(optimizer->SlotInitialValue(static_cast<int>(s)));
  ASSIGN_OR_RETURN(std::vector<VariableSpec> variables, ModelVariables(job.model));
  for (const VariableSpec& var : variables) {
    auto keys = weights.dynamic_keys.find(var.name);
    auto values = weights.values.find(var.name);
    if (!var.dynamic.has_value() || keys == weights.dynamic_keys.end() || values == weights.values.end()) continue;
    const int64_t cap = DynamicShardCap(var.dynamic->max_rows, num_ps);
    std::vector<int64_t> per_shard(static_cast<size_t>(num_ps), 0);
    for (int64_t key : keys->second) ++per_shard[DynamicKeyOwner(static_cast<uint64_t>(key), num_ps)];
    for (int i = 0; i < num_ps; ++i) {
      if (per_shard[i] > cap) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--init_from: dynamic table ", var.name, " would start with ", per_shard[i], " of its ",
            keys->second.size(), " keys on shard ", i, " of ", num_ps, ", over that shard's cap of ", cap,
            " rows (max_rows ", var.dynamic->max_rows, " over ", num_ps,
            " ps tasks; keys are placed by hash); raise max_rows in model.dynamic_tables"));
      }
    }
    ASSIGN_OR_RETURN(DynamicTableState state, InitialDynamicTableState(var.name, var.shape[1], slots, keys->second,
                                                                       values->second.values));
    SavedDynamicShard entry = OneFileDynamicShard(var.name, static_cast<int64_t>(state.keys.size()));
    out.files[entry.file()] = EncodeDynamicTableState(state);
    out.shards.push_back(std::move(entry));
  }
  return out;
}

}  // namespace pstrain
