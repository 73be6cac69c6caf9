// A stand-in for ps/checkpoint_index.cc for builds without the ps library: index.json holds the
// step, the job spec and the shard files; "reading rows" only checks that the files exist.
#include "absl/strings/str_cat.h"
#include "common/json_util.h"
#include "ps/checkpoint_index.h"

namespace pstrain {

absl::Status WriteCheckpointIndex(Env* env, const std::string& dir, const CheckpointIndex& index) {
  nlohmann::json j;
  j["global_step"] = index.global_step;
  j["job_spec"] = index.job_spec_json;
  for (const SavedShard& s : index.shards) j["shards"].push_back({{"variable", s.variable_name()}, {"file", s.file()}});
  return env->WriteFileAtomic(dir + "/index.json", DumpJson(j));
}

absl::StatusOr<CheckpointIndex> ReadCheckpointIndex(Env* env, const std::string& dir) {
  auto text = env->ReadFile(dir + "/index.json");
  if (!text.ok()) return text.status();
  auto j = ParseJson(*text, "index.json");
  if (!j.ok()) return absl::DataLossError(j.status().message());
  CheckpointIndex index;
  index.global_step = (*j)["global_step"].get<int64_t>();
  index.job_spec_json = (*j)["job_spec"].get<std::string>();
  for (const auto& s : (*j)["shards"]) {
    SavedShard shard;
    shard.set_variable_name(s["variable"].get<std::string>());
    shard.set_file(s["file"].get<std::string>());
    index.shards.push_back(shard);
  }
  return index;
}

absl::StatusOr<Tensor> ReadCheckpointRows(Env* env, const std::string& dir, const CheckpointIndex& index,
                                          const std::string& variable_name, int64_t, int64_t,
                                          const std::string&) {
  for (const SavedShard& s : index.shards) {
    if (s.variable_name() != variable_name) continue;
    if (!env->FileExists(dir + "/" + s.file())) return absl::DataLossError(absl::StrCat(s.file(), " is missing"));
    return Tensor();
  }
  return absl::NotFoundError(variable_name);
}

}  // namespace pstrain
