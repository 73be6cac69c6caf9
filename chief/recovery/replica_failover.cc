#include "chief/recovery/replica_failover.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pstrain {

absl::StatusOr<VariablePlanProto> PlanAfterLoss(const VariablePlanProto& plan, int lost) {
  if (lost < 0 || lost >= plan.num_ps()) {
    return absl::InvalidArgumentError(absl::StrCat("ps:", lost, " is not one of the plan's ", plan.num_ps(), " ps"));
  }
  VariablePlanProto out = plan;
  for (auto& variable : *out.mutable_variables()) {
    for (ShardSpecProto& shard : *variable.mutable_shards()) {
      if (shard.ps_task() == lost) {
        if (!shard.has_backup_ps() || shard.backup_ps() == lost) {
          return absl::FailedPreconditionError(absl::StrCat("shard ", shard.shard_name(), " of lost ps:", lost,
                                                            " has no backup to promote"));
        }
        shard.set_ps_task(shard.backup_ps());
        shard.clear_backup_ps();
      } else if (shard.has_backup_ps() && shard.backup_ps() == lost) {
        shard.clear_backup_ps();
      }
    }
  }
  return out;
}

VariablePlanProto PlanWithBackupsOn(const VariablePlanProto& plan, int back) {
  VariablePlanProto out = plan;
  for (auto& variable : *out.mutable_variables()) {
    for (ShardSpecProto& shard : *variable.mutable_shards()) {
      if (!shard.has_backup_ps() && shard.ps_task() != back) shard.set_backup_ps(back);
    }
  }
  return out;
}

std::vector<std::string> BackupsOf(const VariablePlanProto& plan, int primary, int back) {
  std::vector<std::string> out;
  for (const auto& variable : plan.variables()) {
    for (const ShardSpecProto& shard : variable.shards()) {
      if (shard.ps_task() == primary && shard.has_backup_ps() && shard.backup_ps() == back) {
        out.push_back(shard.shard_name());
      }
    }
  }
  return out;
}

absl::StatusOr<int> Rejoin(int back, const VariablePlanProto& new_plan, const CreateShardsRequest& create,
                           const std::vector<PsClient*>& ps) {
  CreateShardsResponse created;
  absl::Status s = ps[back]->CreateShards(create, &created);
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("creating the backups on returned ", ps[back]->peer(), ": ",
                                               s.message()));
  }
  int attached = 0;
  for (int i = 0; i < static_cast<int>(ps.size()); ++i) {
    if (i == back) continue;
    AttachBackupRequest attach;
    attach.set_backup_ps(back);
    for (std::string& name : BackupsOf(new_plan, i, back)) attach.add_shard_names(std::move(name));
    if (attach.shard_names_size() == 0) continue;
    AttachBackupResponse response;
    s = ps[i]->AttachBackup(attach, &response);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat(ps[i]->peer(), " could not attach its backups on ps:", back, ": ",
                                                 s.message()));
    }
    attached += attach.shard_names_size();
  }
  return attached;
}

int PrimariesOn(const VariablePlanProto& plan, int ps) {
  int n = 0;
  for (const auto& variable : plan.variables()) {
    for (const ShardSpecProto& shard : variable.shards()) n += shard.ps_task() == ps ? 1 : 0;
  }
  return n;
}

std::string FailoverReport::Describe() const {
  std::string out = absl::StrFormat(
      "ps:%d lost: %d backup shards promoted, %d shards go on without a backup, %d workers rerouted in %.3f s; "
      "no acknowledged update lost",
      lost_ps, promoted, unbacked, workers_told, seconds);
  for (const std::string& note : notes) absl::StrAppend(&out, "; ", note);
  return out;
}

absl::StatusOr<FailoverReport> FailOver(int lost, const VariablePlanProto& new_plan, const std::vector<PsClient*>& ps,
                                        const std::vector<WorkerClient*>& workers, Env* env, int64_t timeout_ms) {
  const int64_t start = env->NowMicros();
  FailoverReport report;
  report.lost_ps = lost;
  PromoteRequest promote;
  promote.set_lost_ps(lost);
  for (int i = 0; i < static_cast<int>(ps.size()); ++i) {
    if (i == lost) continue;
    PromoteResponse response;
    absl::Status s = ps[i]->Promote(promote, &response);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("promoting the backups of lost ps:", lost, " on ", ps[i]->peer(),
                                                 " failed: ", s.message()));
    }
    report.promoted += response.promoted_size();
    report.unbacked += response.unbacked_size();
  }
  ReassignRequest reassign;
  *reassign.mutable_plan() = new_plan;
  for (WorkerClient* w : workers) {
    ReassignResponse response;
    absl::Status s = w->Reassign(reassign, &response, timeout_ms);
    if (s.ok()) {
      ++report.workers_told;
    } else {
      report.notes.push_back(absl::StrCat(w->peer(), " was not rerouted (", s.message(),
                                          "); it gets the new plan when it is configured again"));
    }
  }
  report.seconds = (env->NowMicros() - start) * 1e-6;
  return report;
}

}  // namespace pstrain
