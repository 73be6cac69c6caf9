// Coordinator: a lost ps in a job with ps_replicas 1. Its shards' backups are promoted and the
// workers rerouted at once (chief/recovery/replica_failover.h); once it answers again at its address it
// receives copies of the shards it should back up. See coordinator.h.
#include "absl/strings/str_cat.h"
#include "chief/coordinator/coordinator.h"
#include "chief/coordinator/job_protos.h"
#include "chief/recovery/replica_failover.h"
#include "common/platform/status_macros.h"

namespace pstrain {

absl::Status Coordinator::HandleLostReplicatedPs(int ps, const absl::Status& cause, const std::string& why,
                                                 int64_t lost_at_micros) {
  const int64_t step = tracker_->global_step();
  ASSIGN_OR_RETURN(VariablePlanProto next, PlanAfterLoss(plan_, ps));
  Log(absl::StrCat("lost ps:", ps, " at ", ps_addresses_[ps], " at step ", step, " (", cause.message(), "; ", why,
                   "): promoting the backups of its shards"));
  gauges_->OnPsLost(ps_[ps]->peer());
  ASSIGN_OR_RETURN(FailoverReport report,
                   FailOver(ps, next, ps_, workers_, env_, options_.pool.configure_timeout_ms));
  {
    absl::MutexLock lock(&plan_mu_);
    plan_ = std::move(next);
  }
  failed_over_.insert(ps);
  // Every shard is saved once, by its primary: the lost ps holds none now (nor when it is back).
  if (checkpoints_ != nullptr) checkpoints_->SkipPs(ps, PrimariesOn(plan_, ps) == 0);
  // From the first report of trouble to every worker rerouted: how long training stood still.
  report.seconds = (env_->NowMicros() - lost_at_micros) * 1e-6;
  Log(report.Describe());
  gauges_->OnPsRecovered(ps_[ps]->peer(), report.seconds, 0);
  nlohmann::json record = {{"kind", "ps_failover"},       {"ps", ps},
                           {"global_step", step},         {"promoted", report.promoted},
                           {"unbacked", report.unbacked}, {"switch_seconds", report.seconds},
                           {"lost_updates", 0}};
  record["wall_time"] = (env_->NowMicros() - tracker_start_micros_) * 1e-6;
  Record(record);
  return absl::OkStatus();
}

absl::Status Coordinator::CheckReturnedPs() {
  if (failed_over_.empty()) return absl::OkStatus();
  const int64_t now = env_->NowMicros();
  if (now - last_return_probe_micros_ < 1000000) return absl::OkStatus();  // at most once a second
  last_return_probe_micros_ = now;
  for (auto it = failed_over_.begin(); it != failed_over_.end();) {
    const int ps = *it;
    if (recovery_->Probe(ps, {}, nullptr) != PsRecovery::State::kIntact) {
      ++it;
      continue;
    }
    const VariablePlanProto next = PlanWithBackupsOn(plan_, ps);
    absl::StatusOr<CreateShardsRequest> create = MakeCreateShardsRequest(spec_, next, ps, num_workers_, false);
    absl::StatusOr<int> backed = create.ok() ? Rejoin(ps, next, *create, ps_) : create.status();
    if (!backed.ok()) {  // it may be gone again: the next probe tells
      Log(absl::StrCat("ps:", ps, " answers again but could not become a backup yet: ", backed.status().message()));
      ++it;
      continue;
    }
    {
      absl::MutexLock lock(&plan_mu_);
      plan_ = next;
    }
    Log(absl::StrCat("ps:", ps, " is back: it backs up ", *backed, " shards again"));
    it = failed_over_.erase(it);
  }
  return absl::OkStatus();
}

}  // namespace pstrain
