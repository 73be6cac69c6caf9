// Coordinator: the lost-ps half (OnPsTrouble, the health watch's reports, HandleLostPs and the
// sync rollback). See coordinator.h and chief/recovery/ps_recovery.h.
#include <future>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "chief/coordinator/coordinator.h"
#include "chief/coordinator/job_protos.h"
#include "common/platform/status_macros.h"

namespace pstrain {

void Coordinator::OnPsTrouble(int ps, const absl::Status& cause) {
  if (ps < 0 || ps >= static_cast<int>(ps_.size())) {
    queue_.Fail(absl::InternalError(
        absl::StrCat("a worker names ps:", ps, " but the cluster has ", ps_.size(), " ps tasks: ", cause.message())));
    return;
  }
  absl::MutexLock lock(&trouble_mu_);  // with the pause, so CheckPsTrouble never resumes past it
  ps_trouble_.try_emplace(ps, PsTrouble{cause, env_->NowMicros()});
  queue_.Pause();  // no closure goes out until the ps is checked (CheckPsTrouble resumes)
}

absl::Status Coordinator::CheckPsTrouble() {
  RETURN_IF_ERROR(CheckReturnedPs());
  std::map<int, PsTrouble> trouble;
  {
    absl::MutexLock lock(&trouble_mu_);
    trouble.swap(ps_trouble_);
  }
  for (const auto& [ps, t] : trouble) RETURN_IF_ERROR(HandleLostPs(ps, t.cause, t.since_micros));
  if (!trouble.empty()) {
    absl::MutexLock lock(&trouble_mu_);
    if (ps_trouble_.empty()) queue_.Resume();  // reports that came meanwhile keep it paused
  }
  return absl::OkStatus();
}

absl::Status Coordinator::CheckPsAlive() {
  for (size_t i = 0; i < ps_.size(); ++i) {
    std::string why;
    if (recovery_->Probe(static_cast<int>(i), ShardNamesOnPs(plan_, static_cast<int>(i)), &why) !=
        PsRecovery::State::kIntact) {
      OnPsTrouble(static_cast<int>(i), absl::UnavailableError(why));
    }
  }
  return CheckPsTrouble();
}

absl::StatusOr<PsRestoreSource> Coordinator::RestoreSource(int ps) {
  PsRestoreSource from;
  if (checkpoints_ != nullptr) {
    std::vector<std::string> warnings;
    ASSIGN_OR_RETURN(std::optional<FoundCheckpoint> found, checkpoints_->FindLatest(&warnings));
    for (const std::string& w : warnings) Log(w);
    if (found.has_value()) {
      from.checkpoint_dir = found->dir;
      from.checkpoint_step = found->index.global_step;
      ASSIGN_OR_RETURN(from.restore, MakeRestoreRequest(spec_, plan_, ps, num_workers_, found->dir));
      return from;
    }
  }
  ASSIGN_OR_RETURN(from.create, MakeCreateShardsRequest(spec_, plan_, ps, num_workers_, /*initialize=*/true));
  return from;
}

absl::Status Coordinator::HandleLostPs(int ps, const absl::Status& cause, int64_t lost_at_micros) {
  if (spec_.ps_replicas > 0 && failed_over_.count(ps) > 0) return absl::OkStatus();  // CheckReturnedPs watches it
  const std::vector<std::string> shards = ShardNamesOnPs(plan_, ps);
  std::string why;
  if (recovery_->Probe(ps, shards, &why) == PsRecovery::State::kIntact) {
    // It serves and holds every shard: the failure was a call's, not the ps's (a failed closure
    // runs again), or a report that came in while it was already being brought back.
    Log(absl::StrCat("ps:", ps, " answers with its shards intact (after: ", cause.message(), "); going on"));
    return absl::OkStatus();
  }
  if (spec_.ps_replicas > 0) return HandleLostReplicatedPs(ps, cause, why, lost_at_micros);
  const int64_t step = tracker_->global_step();
  Log(absl::StrCat("lost ps:", ps, " at ", ps_addresses_[ps], " at step ", step, " (", cause.message(), "; ", why,
                   "): training paused, waiting up to ", options_.ps_recovery.timeout_ms / 1000,
                   " s for it to answer at that address"));
  gauges_->OnPsLost(ps_[ps]->peer());
  SetState("recovering");
  ASSIGN_OR_RETURN(PsRecoveryReport report,
                   recovery_->Recover(ps, std::string(cause.message()), step, lost_at_micros, shards,
                                      [this, ps] { return RestoreSource(ps); }));
  if (spec_.mode == "sync" && !report.intact) {
    // A sync model is one consistent global step: the other ps go back to the same checkpoint.
    absl::StatusOr<PsRestoreSource> from = RestoreSource(ps);
    if (!from.ok()) return from.status();
    RETURN_IF_ERROR(RollBackAll(*from, ps));
    Log(absl::StrCat("all ps rolled back to ", from->checkpoint_dir.empty() ? "the initializers (step 0)"
                                                                            : from->checkpoint_dir,
                     ": training goes on from step ", tracker_->global_step(), " at data positions ",
                     absl::StrJoin(data_->Snapshot(), ",")));
  }
  report.pause_seconds = (env_->NowMicros() - lost_at_micros) * 1e-6;
  Log(report.Describe());
  gauges_->OnPsRecovered(ps_[ps]->peer(), report.pause_seconds, report.lost_updates);
  nlohmann::json record = report.ToJson();
  record["wall_time"] = (env_->NowMicros() - tracker_start_micros_) * 1e-6;
  if (spec_.mode == "sync" && !report.intact) record["rolled_back_to_step"] = tracker_->global_step();
  Record(record);
  SetState("training");
  return absl::OkStatus();
}

absl::Status Coordinator::RollBackAll(const PsRestoreSource& from, int restored_ps) {
  std::vector<std::future<absl::Status>> calls;
  for (int i = 0; i < static_cast<int>(ps_.size()); ++i) {
    if (i == restored_ps) continue;  // already back from the same source
    calls.push_back(std::async(std::launch::async, [this, i, &from]() -> absl::Status {
      PsRestoreSource mine = from;
      ASSIGN_OR_RETURN(mine.restore, MakeRestoreRequest(spec_, plan_, i, num_workers_, from.checkpoint_dir));
      ASSIGN_OR_RETURN(mine.create, MakeCreateShardsRequest(spec_, plan_, i, num_workers_, /*initialize=*/true));
      return recovery_->PutBack(i, mine);
    }));
  }
  absl::Status first;
  for (auto& c : calls) {
    absl::Status s = c.get();
    if (first.ok()) first = s;
  }
  RETURN_IF_ERROR(first);
  // The rounds in flight belong to the steps rolled back: none of them counts.
  queue_.DropAll();
  const int64_t step = from.checkpoint_dir.empty() ? 0 : from.checkpoint_step;
  // The data goes back with the model: every part resumes at the checkpoint's position, so the
  // steps trained again see the same examples.
  std::vector<int64_t> positions = DataPositions::FromStep(step, num_workers_);
  if (!from.checkpoint_dir.empty()) {
    absl::StatusOr<std::optional<std::vector<int64_t>>> saved =
        DataPositions::Load(env_, from.checkpoint_dir, num_workers_);
    if (saved.ok() && saved->has_value()) {
      positions = **saved;
    } else {
      Log(absl::StrCat(saved.ok() ? absl::StrCat(from.checkpoint_dir, " has no ", kDataPositionsFile)
                                  : std::string(saved.status().message()),
                       ": every data part goes back to batch ", step, " (one per global step)"));
    }
  }
  data_->Reset(positions);
  tracker_->RollBackTo(step);
  sync_next_step_ = step;
  rolled_back_ = true;
  return absl::OkStatus();
}

}  // namespace pstrain
