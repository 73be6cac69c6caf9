// PsServer's checkpoint entry points (Save, Restore) and the background forms of the calls that
// can take seconds. See ps_server.h.
#include <set>

#include "absl/strings/str_cat.h"
#include "common/checkpoint/checkpoint_reader.h"
#include "common/platform/confined_path.h"
#include "common/platform/status_macros.h"
#include "ps/store/ps_server.h"
#include "ps/store/shard_loader.h"

namespace pstrain {

absl::Status PsServer::Save(const SaveRequest& request, SaveResponse* response) {
  if (request.checkpoint_dir().empty()) return absl::InvalidArgumentError("Save needs a checkpoint_dir");
  if (options_.confine_checkpoints) RETURN_IF_ERROR(CheckCheckpointDir(options_.checkpoint_root, request.checkpoint_dir()));
  RETURN_IF_ERROR(env_->CreateDirs(request.checkpoint_dir()));
  std::map<std::string, std::shared_ptr<Shard>> shards;
  {
    absl::ReaderMutexLock l(&mu_);
    shards = shards_;
  }
  for (const auto& entry : shards) {
    const std::string& name = entry.first;
    const std::shared_ptr<Shard>& shard = entry.second;
    if (shard->is_backup()) continue;  // saved once, by its primary
    absl::StatusOr<SavedShard> saved;
    auto write = [&](const Tensor& values, const std::vector<Tensor>& slots, int64_t version) {
      // A diverged model is never saved over the last good checkpoint (unless the job said to go on).
      if (shard->options().non_finite == NON_FINITE_REJECT) {
        const int64_t bad = Shard::CountNonFinite(
            absl::string_view(reinterpret_cast<const char*>(values.raw()), values.num_bytes()));
        if (bad > 0) {
          saved = absl::FailedPreconditionError(
              absl::StrCat(options_.task, " does not save shard ", name, ": it holds ", bad,
                           " non-finite values (NaN/Inf) at version ", version,
                           "; the training diverged, and the checkpoints already saved are kept as they are"));
          return;
        }
      }
      saved = WriteShardFile(env_, request.checkpoint_dir(), shard->spec(), values,
                             shard->options().optimizer->SlotNames(), slots, version);
    };
    if (shard->spec().sparse()) {
      // A table shard is written from its own memory while its updates wait: a copy could double
      // the ps's memory. Pulls go on meanwhile.
      shard->WithState(write);
    } else {
      ShardSnapshot snap = shard->Snapshot();
      write(snap.values, snap.slots, snap.version);
    }
    if (!saved.ok()) return saved.status();
    *response->add_shards() = std::move(*saved);
  }
  return SaveDynamic(request.checkpoint_dir(), response);
}

absl::Status PsServer::Restore(const RestoreRequest& request, RestoreResponse* response) {
  ASSIGN_OR_RETURN(ShardOptions opts, MakeOptions(request.optimizer(), request.mode(), request.num_workers(),
                                                  request.sync_timeout_ms(), request.non_finite()));
  if (options_.confine_checkpoints && !request.checkpoint_dir().empty()) {
    RETURN_IF_ERROR(CheckCheckpointDir(options_.checkpoint_root, request.checkpoint_dir()));
  }
  std::set<std::string> names;
  for (const ShardSpecProto& spec : request.shards()) {
    if (!names.insert(spec.shard_name()).second) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", spec.shard_name(), " is listed twice"));
    }
  }
  RETURN_IF_ERROR(CheckMemoryBudget(request.shards(), static_cast<int>(opts.optimizer->SlotNames().size())));
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<DynamicShard>> dynamic,
                   MakeDynamicShards(request.dynamic_shards(), opts, names));
  RETURN_IF_ERROR(RestoreDynamic(request.checkpoint_dir(), dynamic));
  // A restore of dynamic shards alone needs no index of dense shards.
  std::vector<std::shared_ptr<Shard>> shards;
  if (request.shards_size() > 0 || request.dynamic_shards_size() == 0) {
    ASSIGN_OR_RETURN(shards, LoadShardsFromCheckpoint(env_, request.checkpoint_dir(),
                                                      {request.shards().begin(), request.shards().end()}, opts));
  }
  RETURN_IF_ERROR(AssignRoles(shards));
  Install(std::move(shards));
  InstallDynamic(std::move(dynamic));
  return absl::OkStatus();
}

void PsServer::CreateShardsInBackground(const CreateShardsRequest* request, CreateShardsResponse* response,
                                        DoneCallback done) {
  background_.Run([this, request, response, done = std::move(done)] { done(CreateShards(*request, response)); });
}

void PsServer::SaveInBackground(const SaveRequest* request, SaveResponse* response, DoneCallback done) {
  background_.Run([this, request, response, done = std::move(done)] { done(Save(*request, response)); });
}

void PsServer::AttachBackupInBackground(const AttachBackupRequest* request, AttachBackupResponse* response,
                                        DoneCallback done) {
  background_.Run([this, request, response, done = std::move(done)] { done(AttachBackup(*request, response)); });
}

void PsServer::RestoreInBackground(const RestoreRequest* request, RestoreResponse* response, DoneCallback done) {
  background_.Run([this, request, response, done = std::move(done)] { done(Restore(*request, response)); });
}

}  // namespace pstrain
