// PsServer's replication (ps_replicas 1): shard roles, forwarding applied updates to backups,
// applying forwards on the backup, and promotion when the chief lost a ps. See ps_server.h and
// replica_link.h.
#include <atomic>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "ps/store/ps_server.h"

namespace pstrain {

absl::Status PsServer::CheckNotBackup(const Shard& shard) const {
  if (!shard.is_backup()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("shard ", shard.name(), " on ", options_.task,
                                                    " is the backup of ps:", shard.spec().ps_task(),
                                                    "'s copy; workers pull and push it on its primary"));
}

ReplicaLink* PsServer::LinkTo(int ps) {
  std::unique_ptr<ReplicaLink>& link = links_[ps];
  if (link != nullptr && link->detached()) retired_links_.push_back(std::move(link));
  if (link == nullptr) {
    ReplicaLink::Options o;
    o.from = options_.task;
    o.to = absl::StrCat("ps:", ps);
    o.in_flight = options_.replica_in_flight;
    o.retry_for = options_.replica_retry_for;
    o.env = env_;
    o.log = options_.log;
    link = std::make_unique<ReplicaLink>(std::move(o), options_.connect_ps(ps));
  }
  return link.get();
}

absl::Status PsServer::AssignRoles(const std::vector<std::shared_ptr<Shard>>& shards, bool initialized) {
  const int me = options_.ps_index;
  for (const auto& shard : shards) {
    const ShardSpecProto& spec = shard->spec();
    if (!spec.has_backup_ps()) continue;
    if (spec.backup_ps() == spec.ps_task()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shard ", spec.shard_name(), " names ps:", spec.ps_task(), " as its primary and its backup"));
    }
    if (me < 0 || (spec.ps_task() != me && spec.backup_ps() != me)) {
      return absl::FailedPreconditionError(absl::StrCat(
          options_.task, " was asked to hold shard ", spec.shard_name(), " of ps:", spec.ps_task(), " backed up on ps:",
          spec.backup_ps(), ", but it is neither (its index: ", me, "); check that the chief and the ps share TF_CONFIG"));
    }
    if (spec.ps_task() == me && options_.connect_ps == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(options_.task, " cannot reach other ps tasks to keep the backup of ",
                                                        spec.shard_name(), " on ps:", spec.backup_ps(),
                                                        " (ps_replicas needs every ps to know the cluster's ps list)"));
    }
  }
  absl::MutexLock l(&mu_);
  for (const auto& shard : shards) {
    const ShardSpecProto& spec = shard->spec();
    const bool backup = spec.has_backup_ps() && spec.backup_ps() == me;
    shard->set_backup(backup);
    if (backup && !initialized) shard->set_awaiting_state();
    if (spec.has_backup_ps() && spec.ps_task() == me) {
      LinkTo(spec.backup_ps());
      shard->set_forward_to(spec.backup_ps());
    } else {
      shard->set_forward_to(-1);
    }
  }
  return absl::OkStatus();
}

absl::Status PsServer::ApplyForwarded(int worker, const std::vector<GradientView>& gradients,
                                      const std::vector<SparseRowsView>& sparse, absl::Span<const int64_t> versions,
                                      PushResponse* response) {
  if (versions.size() != gradients.size() + sparse.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a forward to ", options_.task, " gives ", versions.size(),
                                                   " versions for ", gradients.size() + sparse.size(), " updates"));
  }
  PushPlan plan;
  RETURN_IF_ERROR(ValidatePush(worker, 0, gradients, sparse, &plan, /*forwarded=*/true));
  for (const PushPlan::Part& part : plan.parts) {
    // A primary forwards only updates it applied, never non-finite ones (it skips or refuses those).
    if (part.skipped) {
      part.shard->CountRejected();
      return absl::InvalidArgumentError(absl::StrCat("a forward to ", options_.task, " carries non-finite values for ",
                                                     part.shard->name(), ", which its primary never applies"));
    }
  }
  response->clear_versions();
  for (size_t i = 0; i < plan.parts.size(); ++i) {
    PushPlan::Part& part = plan.parts[i];
    std::shared_ptr<Shard> shard = part.shard;
    part.CountPush();
    // Kept, the update is the backup's as surely as applied (a promotion applies it first), so it
    // is answered now and applied off the path of the worker's push.
    if (options_.replica_defer_bytes > 0 &&
        shard->DeferReplica(versions[i], part.grad, &part.rows, options_.replica_defer_bytes)) {
      response->add_versions(versions[i]);
      ScheduleDeferred(std::move(shard));
    } else {
      // A refused part leaves the earlier ones in: the retry finds them applied or held.
      ASSIGN_OR_RETURN(int64_t reached,
                       shard->ApplyReplica(versions[i], part.grad, std::move(part.rows), options_.replica_hold_bytes));
      response->add_versions(reached);
    }
  }
  return absl::OkStatus();
}

void PsServer::ScheduleDeferred(std::shared_ptr<Shard> shard) {
  bool wake;
  {
    absl::MutexLock l(&deferred_mu_);
    wake = deferred_.empty();
    deferred_.insert(std::move(shard));
  }
  if (wake) replica_applier_.Run([this] { ApplyDeferred(); });
}

void PsServer::ApplyDeferred() {
  std::set<std::shared_ptr<Shard>> shards;
  {
    absl::MutexLock l(&deferred_mu_);
    shards.swap(deferred_);
  }
  for (const auto& shard : shards) shard->ApplyDeferredReplicaUpdates();
}

void PsServer::ForwardThenDone(const std::vector<GradientView>& gradients, const std::vector<SparseRowsView>& sparse,
                               const std::vector<Forwarded>& forwards, DoneCallback done) {
  // One forward per backup ps (one with ps_replicas 1 and round-robin backups), its parts in
  // request order (`forwards` is: dense gradients first, then the sparse entries), its bytes those
  // of the push, which stay valid until `done` runs.
  struct Outgoing {
    PushRequest header;
    std::vector<absl::string_view> payload;
    ReplicaLink* link = nullptr;
  };
  std::map<int, Outgoing> outgoing;
  for (const Forwarded& f : forwards) {
    Outgoing& out = outgoing[f.target];
    out.header.add_replica_versions(f.version);
    if (f.part < gradients.size()) {
      const GradientView& g = gradients[f.part];
      ShardGradient* h = out.header.add_gradients();
      h->set_name(g.name);
      h->mutable_gradient()->set_dtype(g.dtype);
      for (int64_t d : g.shape) h->mutable_gradient()->add_shape(d);
      out.payload.push_back(g.data);
    } else {
      const SparseRowsView& v = sparse[f.part - gradients.size()];
      SparseRows* h = out.header.add_sparse();
      h->set_shard_name(v.name);
      h->set_num_ids(v.num_ids);
      out.payload.push_back(v.ids);
      out.payload.push_back(v.values);
    }
  }
  {
    // Pushes share the lock: AssignRoles or AttachBackup made the link before setting forward_to.
    absl::ReaderMutexLock l(&mu_);
    for (auto& [target, out] : outgoing) {
      auto it = links_.find(target);
      if (it != links_.end()) out.link = it->second.get();
    }
  }
  struct Countdown {
    explicit Countdown(size_t n, DoneCallback d) : left(static_cast<int>(n)), done(std::move(d)) {}
    std::atomic<int> left;
    absl::Mutex mu;
    absl::Status first ABSL_GUARDED_BY(mu);
    DoneCallback done;
  };
  auto countdown = std::make_shared<Countdown>(outgoing.size(), std::move(done));
  for (auto& [target, out] : outgoing) {
    auto answer = [countdown](absl::Status s) {
      if (!s.ok()) {
        absl::MutexLock l(&countdown->mu);
        if (countdown->first.ok()) countdown->first = s;
      }
      if (countdown->left.fetch_sub(1) == 1) {
        absl::Status result;
        {
          absl::MutexLock l(&countdown->mu);
          // A status of its own, moved to the push's thread: none of this sender's copies share its
          // text, so no thread frees what another still reads (abseil's shared-status counts are
          // atomics in a library ThreadSanitizer cannot see).
          if (!countdown->first.ok()) {
            result = absl::Status(countdown->first.code(), std::string(countdown->first.message()));
          }
        }
        countdown->done(std::move(result));
      }
    };
    if (out.link == nullptr) {
      answer(absl::InternalError(absl::StrCat(options_.task, " has no link to the backup of an updated shard")));
    } else {
      out.link->Forward(std::move(out.header), std::move(out.payload), std::move(answer));
    }
  }
}

absl::Status PsServer::Promote(const PromoteRequest& request, PromoteResponse* response) {
  const int lost = request.lost_ps();
  if (lost == options_.ps_index) {
    return absl::InvalidArgumentError(absl::StrCat(options_.task, " was told that it is lost itself"));
  }
  std::map<std::string, std::shared_ptr<Shard>> shards;
  ReplicaLink* link = nullptr;
  {
    absl::MutexLock l(&mu_);
    shards = shards_;
    auto it = links_.find(lost);
    if (it != links_.end()) link = it->second.get();
  }
  int64_t applied = 0;
  for (const auto& [name, shard] : shards) {
    if (shard->is_backup() && shard->spec().ps_task() == lost) {
      applied += shard->ApplyHeldReplicaUpdates();
      shard->set_backup(false);
      response->add_promoted(name);
    } else if (shard->forward_to() == lost) {
      shard->set_forward_to(-1);
      response->add_unbacked(name);
    }
  }
  // After the roles changed: forwards still queued to the lost ps are answered now.
  if (link != nullptr) link->Detach(absl::StrCat("the chief lost ps:", lost));
  if (options_.log) {
    options_.log(absl::StrCat("ps:", lost, " lost: promoted ", response->promoted_size(), " backup shards (",
                              applied, " held updates applied), ", response->unbacked_size(),
                              " shards go on without a backup"));
  }
  return absl::OkStatus();
}

absl::Status PsServer::AttachBackup(const AttachBackupRequest& request, AttachBackupResponse* response) {
  const int backup = request.backup_ps();
  if (backup == options_.ps_index || backup < 0) {
    return absl::InvalidArgumentError(absl::StrCat(options_.task, " cannot back up its shards on ps:", backup));
  }
  if (options_.connect_ps == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(options_.task, " cannot reach other ps tasks"));
  }
  std::vector<std::string> names(request.shard_names().begin(), request.shard_names().end());
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Shard>> shards, Lookup(names));
  for (const auto& shard : shards) {
    if (shard->is_backup()) {
      return absl::FailedPreconditionError(
          absl::StrCat("shard ", shard->name(), " is a backup on ", options_.task, ", not a primary"));
    }
  }
  ReplicaLink* link;
  {
    absl::MutexLock l(&mu_);
    link = LinkTo(backup);
  }
  for (const auto& shard : shards) {
    ShardSnapshot snap = shard->SnapshotForBackup(backup);
    ReplicaStateRequest state;
    state.set_shard_name(shard->name());
    state.set_version(snap.version);
    state.mutable_values()->set_data(reinterpret_cast<const char*>(snap.values.raw()), snap.values.num_bytes());
    for (const Tensor& slot : snap.slots) {
      state.add_slots()->set_data(reinterpret_cast<const char*>(slot.raw()), slot.num_bytes());
    }
    absl::Status s = link->Install(state);
    if (!s.ok()) {
      shard->set_forward_to(-1);
      return s;
    }
  }
  if (options_.log) {
    options_.log(absl::StrCat("ps:", backup, " backs up ", shards.size(), " shards of ", options_.task, " again"));
  }
  return absl::OkStatus();
}

absl::Status PsServer::InstallReplica(const ReplicaStateRequest& request, ReplicaStateResponse* response) {
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Shard>> shards, Lookup({request.shard_name()}));
  Shard& shard = *shards[0];
  if (!shard.is_backup()) {
    return absl::FailedPreconditionError(
        absl::StrCat("shard ", shard.name(), " on ", options_.task, " is not a backup; its state is its own"));
  }
  std::vector<absl::string_view> slots;
  for (const TensorProto& t : request.slots()) slots.push_back(t.data());
  return shard.InstallReplicaState(request.values().data(), slots, request.version());
}

}  // namespace pstrain
