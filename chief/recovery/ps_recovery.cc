#include "chief/recovery/ps_recovery.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/wire/protocol_version.h"

namespace pstrain {

nlohmann::json PsRecoveryReport::ToJson() const {
  nlohmann::json j;
  j["kind"] = "ps_recovery";
  j["ps"] = ps;
  j["peer"] = peer;
  j["cause"] = cause;
  j["step"] = global_step;
  j["intact"] = intact;
  j["source"] = source;
  j["checkpoint_step"] = checkpoint_step;
  j["lost_updates"] = lost_updates;
  j["pause_seconds"] = pause_seconds;
  return j;
}

std::string PsRecoveryReport::Describe() const {
  const std::string task = absl::StrCat("ps:", ps);
  if (intact) {
    return absl::StrFormat("%s came back with its shards intact after %.1f s: nothing restored, no update lost",
                           task, pause_seconds);
  }
  const std::string from = source == "initializers" ? "re-initialised from the initializers (no checkpoint yet)"
                                                    : absl::StrCat("restored from ", source);
  return absl::StrFormat("%s is back at step %d: its shards %s; lost %d updates (global steps %d..%d), paused %.1f s",
                         task, global_step, from, lost_updates, checkpoint_step, global_step, pause_seconds);
}

std::vector<std::string> ShardNamesOnPs(const VariablePlanProto& plan, int ps_task) {
  std::vector<std::string> names;
  for (const auto& v : plan.variables()) {
    for (const auto& s : v.shards()) {
      if (s.ps_task() == ps_task) names.push_back(s.shard_name());
    }
  }
  return names;
}

PsRecovery::PsRecovery(Env* env, std::vector<PsClient*> ps, std::vector<PsClient*> probes, PsRecoveryOptions options)
    : env_(env), ps_(std::move(ps)), probes_(probes.empty() ? ps_ : std::move(probes)), options_(options) {}

PsRecovery::State PsRecovery::Probe(int ps, const std::vector<std::string>& shards, std::string* why) {
  PsClient* probe = probes_[ps];
  HandshakeRequest hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_caller("chief:0");
  HandshakeResponse reply;
  absl::Status s = probe->Handshake(hello, &reply);
  PsStatsResponse stats;
  if (s.ok()) s = probe->GetStats(PsStatsRequest(), &stats);
  if (!s.ok()) {
    if (why != nullptr) *why = std::string(s.message());
    return State::kSilent;
  }
  std::set<std::string> held;
  for (const ShardStats& shard : stats.shards()) held.insert(shard.name());
  // A dynamic table's shards are reported apart (they have no version); they count as held too.
  for (const DynamicShardStats& shard : stats.dynamic_shards()) held.insert(shard.name());
  for (const std::string& name : shards) {
    if (held.count(name) == 0) {
      if (why != nullptr) *why = absl::StrCat(probe->peer(), " does not hold shard ", name);
      return State::kMissingShards;
    }
  }
  return State::kIntact;
}

absl::Status PsRecovery::PutBack(int ps, const PsRestoreSource& source) {
  absl::Status s;
  if (source.checkpoint_dir.empty()) {
    CreateShardsResponse created;
    s = ps_[ps]->CreateShards(source.create, &created);
  } else {
    RestoreResponse restored;
    s = ps_[ps]->Restore(source.restore, &restored);
  }
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("putting the shards of ", ps_[ps]->peer(), " back from ",
                                             source.checkpoint_dir.empty() ? "the initializers" : source.checkpoint_dir,
                                             ": ", s.message()));
}

absl::StatusOr<PsRecoveryReport> PsRecovery::Recover(int ps, const std::string& cause, int64_t global_step,
                                                    int64_t lost_at_micros, const std::vector<std::string>& shards,
                                                    const std::function<absl::StatusOr<PsRestoreSource>()>& source) {
  PsRecoveryReport report;
  report.ps = ps;
  report.peer = ps_[ps]->peer();
  report.cause = cause;
  report.global_step = global_step;
  const int64_t give_up = lost_at_micros + options_.timeout_ms * 1000;
  std::string why;
  State state = Probe(ps, shards, &why);
  while (state == State::kSilent) {
    if (env_->NowMicros() >= give_up) {
      return absl::UnavailableError(absl::StrCat(
          "lost ", report.peer, " (", cause, ") and it did not answer again within ", kPsRecoveryTimeoutFlag, "=",
          options_.timeout_ms / 1000, " s (last probe: ", why,
          "); restart it at the same address (an orchestrator or deploy/local/supervise.sh does) or raise ",
          kPsRecoveryTimeoutFlag));
    }
    if (options_.stopping && options_.stopping()) {
      return absl::CancelledError(absl::StrCat("stopped while waiting for the lost ", report.peer,
                                               " to answer again (last probe: ", why, ")"));
    }
    env_->SleepForMicros(options_.poll_interval_ms * 1000);
    state = Probe(ps, shards, &why);
  }
  if (state == State::kMissingShards) {
    absl::StatusOr<PsRestoreSource> from = source();
    if (!from.ok()) return from.status();
    absl::Status put = PutBack(ps, *from);
    if (!put.ok()) return put;
    report.source = from->checkpoint_dir.empty() ? "initializers" : from->checkpoint_dir;
    report.checkpoint_step = from->checkpoint_dir.empty() ? 0 : from->checkpoint_step;
    report.lost_updates = std::max<int64_t>(0, global_step - report.checkpoint_step);
  } else {
    report.intact = true;
  }
  report.pause_seconds = (env_->NowMicros() - lost_at_micros) * 1e-6;
  return report;
}

}  // namespace pstrain
