#include "chief/checkpoint/checkpoint_manager.h"

#include <unistd.h>

#include <algorithm>
#include <future>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/checkpoint/checkpoint_reader.h"
#include "common/checkpoint/dynamic_shard_files.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"

namespace pstrain {

CheckpointManager::CheckpointManager(Env* env, std::string model_dir, int keep, std::vector<PsClient*> ps)
    : env_(env), model_dir_(std::move(model_dir)), keep_(std::max(1, keep)), ps_(std::move(ps)) {}

int64_t CheckpointManager::StepOfName(const std::string& name) {
  if (!absl::StartsWith(name, "ckpt-")) return -1;
  int64_t step = 0;
  if (!absl::SimpleAtoi(name.substr(5), &step) || step < 0) return -1;
  // SimpleAtoi accepts "+5" and spaces; only canonical digits are ours.
  if (absl::StrCat("ckpt-", step) != name) return -1;
  return step;
}

absl::StatusOr<std::string> CheckpointManager::Save(int64_t global_step, const std::string& job_spec_json,
                                                     const std::map<std::string, std::string>& extra_files) {
  return Commit(global_step,
                [&](const std::string& tmp) { return SaveInto(tmp, global_step, job_spec_json, extra_files); });
}

absl::StatusOr<std::string> CheckpointManager::SaveValues(int64_t global_step, const std::string& job_spec_json,
                                                          const VariablePlanProto& plan, const FloatTensorMap& values,
                                                          const std::map<std::string, std::string>& extra_files,
                                                          const std::vector<SavedDynamicShard>& dynamic_shards) {
  return Commit(global_step, [&](const std::string& tmp) -> absl::Status {
    CheckpointIndex index;
    index.global_step = global_step;
    index.job_spec_json = job_spec_json;
    index.dynamic_shards = dynamic_shards;
    for (const VariablePlanProto::Variable& var : plan.variables()) {
      if (var.has_dynamic()) {
        const bool given = std::any_of(dynamic_shards.begin(), dynamic_shards.end(),
                                       [&var](const SavedDynamicShard& d) { return d.table_name() == var.name(); });
        if (given) continue;  // its rows are in `extra_files`
        return absl::InvalidArgumentError(
            absl::StrCat("dynamic table ", var.name(), " takes no starting values: its rows are made by the keys ",
                         "the job meets. Drop --init_from, or give the field a vocabulary_size instead of dynamic"));
      }
      const std::vector<int64_t> shape(var.shape().begin(), var.shape().end());
      auto it = values.find(var.name());
      if (it == values.end() || it->second.shape != shape ||
          static_cast<int64_t>(it->second.values.size()) != NumElements(shape)) {
        return absl::InvalidArgumentError(
            absl::StrCat("no value of shape ", ShapeString(shape), " for variable ", var.name()));
      }
      ShardSpecProto whole;
      whole.set_shard_name(var.name());
      whole.set_variable_name(var.name());
      *whole.mutable_full_shape() = var.shape();
      whole.set_rows(shape.empty() ? 1 : shape[0]);
      whole.set_row_stride(1);
      whole.set_dtype(DT_FLOAT);
      Tensor tensor(DType::kFloat32, shape);
      std::copy(it->second.values.begin(), it->second.values.end(), tensor.data<float>());
      ASSIGN_OR_RETURN(SavedShard saved, WriteShardFile(env_, tmp, whole, tensor, {}, {}, /*version=*/0));
      index.shards.push_back(std::move(saved));
    }
    RETURN_IF_ERROR(WriteCheckpointIndex(env_, tmp, index));
    for (const auto& [name, contents] : extra_files) RETURN_IF_ERROR(env_->WriteFileAtomic(tmp + "/" + name, contents));
    return env_->SyncDir(tmp);
  });
}

absl::StatusOr<std::string> CheckpointManager::Commit(int64_t global_step,
                                                      const std::function<absl::Status(const std::string&)>& fill) {
  RETURN_IF_ERROR(env_->CreateDirs(model_dir_));
  const std::string final_dir = absl::StrCat(model_dir_, "/ckpt-", global_step);
  const std::string tmp = absl::StrCat(final_dir, ".tmp-", ::getpid());
  RETURN_IF_ERROR(env_->RemoveAll(tmp));
  RETURN_IF_ERROR(env_->CreateDirs(tmp));
  absl::Status s = fill(tmp);
  if (s.ok() && env_->FileExists(final_dir)) s = env_->RemoveAll(final_dir);  // same step saved again
  if (s.ok()) s = env_->Rename(tmp, final_dir);
  if (!s.ok()) {
    env_->RemoveAll(tmp).IgnoreError();
    return absl::Status(s.code(), absl::StrCat("checkpoint at step ", global_step, " failed: ", s.message()));
  }
  RETURN_IF_ERROR(Prune());
  return final_dir;
}

void CheckpointManager::SkipPs(int ps, bool skip) {
  if (skip_.size() < ps_.size()) skip_.resize(ps_.size(), false);
  if (ps >= 0 && ps < static_cast<int>(skip_.size())) skip_[static_cast<size_t>(ps)] = skip;
}

absl::Status CheckpointManager::SaveInto(const std::string& tmp, int64_t global_step, const std::string& job_spec_json,
                                         const std::map<std::string, std::string>& extra_files) {
  std::vector<std::future<absl::StatusOr<SaveResponse>>> calls;
  for (size_t i = 0; i < ps_.size(); ++i) {
    if (i < skip_.size() && skip_[i]) continue;
    PsClient* ps = ps_[i];
    calls.push_back(std::async(std::launch::async, [ps, &tmp, global_step]() -> absl::StatusOr<SaveResponse> {
      SaveRequest request;
      request.set_checkpoint_dir(tmp);
      request.set_global_step(global_step);
      SaveResponse response;
      absl::Status s = ps->Save(request, &response);
      if (!s.ok()) return absl::Status(s.code(), absl::StrCat(ps->peer(), ": ", s.message()));
      return response;
    }));
  }
  CheckpointIndex index;
  index.global_step = global_step;
  index.job_spec_json = job_spec_json;
  absl::Status first_error;
  for (auto& call : calls) {
    absl::StatusOr<SaveResponse> r = call.get();
    if (!r.ok()) {
      if (first_error.ok()) first_error = r.status();
      continue;
    }
    for (const SavedShard& shard : r->shards()) index.shards.push_back(shard);
    for (const SavedDynamicShard& shard : r->dynamic_shards()) index.dynamic_shards.push_back(shard);
  }
  RETURN_IF_ERROR(first_error);
  std::sort(index.dynamic_shards.begin(), index.dynamic_shards.end(),
            [](const SavedDynamicShard& a, const SavedDynamicShard& b) {
              return std::make_tuple(a.table_name(), a.shard_index()) <
                     std::make_tuple(b.table_name(), b.shard_index());
            });
  // Every shard of each dynamic table answered: a checkpoint missing one is never committed.
  RETURN_IF_ERROR(GroupDynamicShards(index.dynamic_shards).status());
  RETURN_IF_ERROR(WriteCheckpointIndex(env_, tmp, index));
  for (const auto& [name, contents] : extra_files) RETURN_IF_ERROR(env_->WriteFileAtomic(tmp + "/" + name, contents));
  return env_->SyncDir(tmp);
}

absl::Status CheckpointManager::Prune() {
  ASSIGN_OR_RETURN(std::vector<std::string> names, env_->ListDir(model_dir_));
  std::vector<int64_t> steps;
  for (const std::string& name : names) {
    const int64_t step = StepOfName(name);
    if (step >= 0) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  for (size_t i = 0; i + keep_ < steps.size(); ++i) {
    RETURN_IF_ERROR(env_->RemoveAll(absl::StrCat(model_dir_, "/ckpt-", steps[i])));
  }
  return absl::OkStatus();
}

absl::Status CheckpointManager::Verify(Env* env, const std::string& dir, const CheckpointIndex& index) {
  CheckpointReader reader(env, dir, &index);
  return reader.VerifyAll();
}

absl::StatusOr<std::optional<FoundCheckpoint>> CheckpointManager::FindLatest(std::vector<std::string>* warnings,
                                                                              bool remove_incomplete) {
  if (!env_->FileExists(model_dir_)) return std::optional<FoundCheckpoint>();
  ASSIGN_OR_RETURN(std::vector<std::string> names, env_->ListDir(model_dir_));
  auto warn = [warnings](const std::string& line) {
    if (warnings != nullptr) warnings->push_back(line);
  };
  std::vector<std::pair<int64_t, std::string>> candidates;
  for (const std::string& name : names) {
    if (absl::StartsWith(name, "ckpt-") && absl::StrContains(name, ".tmp-")) {
      if (!remove_incomplete) continue;
      warn(absl::StrCat("ignoring incomplete checkpoint ", model_dir_, "/", name,
                        " (an interrupted save); removing it"));
      env_->RemoveAll(absl::StrCat(model_dir_, "/", name)).IgnoreError();
      continue;
    }
    const int64_t step = StepOfName(name);
    if (step >= 0) candidates.emplace_back(step, name);
  }
  std::sort(candidates.rbegin(), candidates.rend());
  std::vector<std::string> unusable;  // "dir: reason", newest first
  for (const auto& [step, name] : candidates) {
    const std::string dir = absl::StrCat(model_dir_, "/", name);
    absl::StatusOr<CheckpointIndex> index = ReadCheckpointIndex(env_, dir);
    absl::Status s = index.ok() ? Verify(env_, dir, *index) : index.status();
    if (s.ok() && index->global_step != step) {
      s = absl::DataLossError(absl::StrCat("index.json says step ", index->global_step));
    }
    if (!s.ok()) {
      unusable.push_back(absl::StrCat(dir, ": ", s.message()));
      continue;
    }
    for (const std::string& line : unusable) {
      warn(absl::StrCat("ignoring checkpoint ", line));
    }
    // The newer, unusable ones are kept, but out of the way of this run's saves and pruning.
    if (remove_incomplete) {
      for (const auto& [newer_step, newer] : candidates) {
        if (newer_step <= step) break;
        const std::string from = absl::StrCat(model_dir_, "/", newer);
        std::string to = from + ".unusable";
        for (int i = 2; env_->FileExists(to); ++i) to = absl::StrCat(from, ".unusable-", i);
        if (env_->Rename(from, to).ok()) warn(absl::StrCat("moved the unusable checkpoint ", from, " aside to ", to));
      }
    }
    return std::optional<FoundCheckpoint>(FoundCheckpoint{dir, *std::move(index)});
  }
  if (!unusable.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("the model dir ", model_dir_, " holds ", unusable.size(),
                                                      unusable.size() == 1 ? " checkpoint" : " checkpoints",
                                                      " and none can be used (they are left untouched):\n  ",
                                                      absl::StrJoin(unusable, "\n  ")));
  }
  return std::optional<FoundCheckpoint>();
}

}  // namespace pstrain
