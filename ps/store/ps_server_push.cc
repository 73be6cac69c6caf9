// PsServer's push path: validating every gradient (dense, and the rows of table shards) before
// anything is applied, then applying (async) or parking until the sync step completes. See
// ps_server.h.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/platform/status_macros.h"
#include "ps/store/parked_call.h"
#include "ps/store/ps_server.h"

namespace pstrain {

namespace {

absl::Status NonFinite(const Shard& shard, int worker, int64_t bad) {
  return absl::InvalidArgumentError(absl::StrCat("shard ", shard.name(), ": gradient from worker ", worker, " has ",
                                                 bad,
                                                 " non-finite values (NaN/Inf); push rejected, shard unchanged "
                                                 "(non_finite NON_FINITE_SKIP skips such gradients instead)"));
}

absl::Status KindMismatch(const Shard& shard, bool as_rows) {
  if (as_rows) {
    return absl::InvalidArgumentError(absl::StrCat("shard ", shard.name(), " of dense variable ",
                                                   shard.spec().variable_name(),
                                                   " is pulled and pushed whole, not by row ids"));
  }
  return absl::InvalidArgumentError(absl::StrCat("shard ", shard.name(), " of embedding table ",
                                                 shard.spec().variable_name(),
                                                 " is pulled and pushed by row ids (sparse entries), never whole"));
}

}  // namespace

absl::Status CheckRowAccess(const Shard& shard, bool as_rows) {
  return shard.spec().sparse() == as_rows ? absl::OkStatus() : KindMismatch(shard, as_rows);
}

std::vector<SparseRowsView> SparseRowsViews(const PushRequest& request) {
  std::vector<SparseRowsView> views;
  views.reserve(static_cast<size_t>(request.sparse_size()));
  for (const SparseRows& r : request.sparse()) views.push_back({r.shard_name(), r.num_ids(), r.ids(), r.values()});
  return views;
}

absl::StatusOr<std::vector<std::shared_ptr<Tensor>>> PsServer::GradientBuffers(const PushRequest& header) const {
  std::vector<std::string> names;
  for (const ShardGradient& g : header.gradients()) names.push_back(g.name());
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Shard>> shards, Lookup(names));
  std::vector<std::shared_ptr<Tensor>> buffers;
  for (int i = 0; i < header.gradients_size(); ++i) {
    const TensorProto& g = header.gradients(i).gradient();
    const std::vector<int64_t> shape(g.shape().begin(), g.shape().end());
    RETURN_IF_ERROR(CheckRowAccess(*shards[i], false));
    RETURN_IF_ERROR(shards[i]->CheckGradient(g.dtype(), shape, shards[i]->num_bytes()));
    buffers.push_back(shards[i]->GradientBuffer());
  }
  return buffers;
}

absl::Status PsServer::CheckSparseSizes(const PushRequest& header, absl::Span<const int64_t> ids_bytes,
                                        absl::Span<const int64_t> values_bytes) const {
  std::vector<std::string> names;
  for (const SparseRows& r : header.sparse()) names.push_back(r.shard_name());
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Shard>> shards, Lookup(names));
  int64_t total = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const Shard& shard = *shards[i];
    RETURN_IF_ERROR(CheckRowAccess(shard, true));
    const int64_t n = header.sparse(static_cast<int>(i)).num_ids();
    const int64_t row_bytes = shard.row_elements() * static_cast<int64_t>(sizeof(float));
    // Checked before multiplying: a peer's num_ids must not overflow the products below.
    if (n < 0 || n > kMaxMessageBytes / (row_bytes + 8) || ids_bytes[i] != n * 8 || values_bytes[i] != n * row_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", shard.name(), ": ", n, " gradient rows of ", row_bytes,
                                                     " bytes arrived as ", ids_bytes[i], " id bytes and ",
                                                     values_bytes[i], " value bytes"));
    }
    total += ids_bytes[i] + values_bytes[i];
  }
  if (total > kMaxMessageBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a push of ", total, " bytes of gradient rows exceeds the 2 GiB message limit"));
  }
  return absl::OkStatus();
}

absl::Status PsServer::ValidatePush(int worker, int64_t step, const std::vector<GradientView>& gradients,
                                    const std::vector<SparseRowsView>& sparse, PushPlan* plan, bool forwarded) const {
  std::vector<std::string> names;
  for (const GradientView& g : gradients) names.push_back(g.name);
  for (const SparseRowsView& r : sparse) names.push_back(r.name);
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Shard>> shards, Lookup(names));
  plan->parts.resize(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    PushPlan::Part& part = plan->parts[i];
    part.shard = shards[i];
    part.table = i >= gradients.size();
    absl::Status s;
    if (forwarded != part.shard->is_backup()) {
      s = forwarded ? absl::FailedPreconditionError(absl::StrCat("shard ", part.shard->name(), " on ", options_.task,
                                                                 " is not a backup (promoted, or another plan); "
                                                                 "its updates are not taken from another ps"))
                    : CheckNotBackup(*part.shard);
    }
    if (s.ok()) {
      s = part.table ? PrepareRows(worker, sparse[i - gradients.size()], &part)
                     : PrepareDense(worker, gradients[i], &part);
    }
    if (s.ok() && part.shard->options().mode == UPDATE_SYNC) s = part.shard->CheckSyncPush(worker, step);
    if (!s.ok()) {
      part.shard->CountRejected();
      return s;
    }
    plan->skipped += part.skipped ? 1 : 0;
  }
  return absl::OkStatus();
}

absl::Status PsServer::PrepareDense(int worker, const GradientView& g, PushPlan::Part* part) const {
  const Shard& shard = *part->shard;
  RETURN_IF_ERROR(CheckRowAccess(shard, false));
  RETURN_IF_ERROR(shard.CheckGradient(g.dtype, g.shape, g.data.size()));
  const int64_t bad = g.non_finite >= 0 ? g.non_finite : Shard::CountNonFinite(g.data);
  if (bad > 0 && shard.options().non_finite == NON_FINITE_REJECT) return NonFinite(shard, worker, bad);
  part->skipped = bad > 0;
  part->grad = part->skipped ? nullptr : g.data.data();
  part->bytes = static_cast<int64_t>(shard.num_bytes());
  return absl::OkStatus();
}

absl::Status PsServer::PrepareRows(int worker, const SparseRowsView& r, PushPlan::Part* part) const {
  const Shard& shard = *part->shard;
  RETURN_IF_ERROR(CheckRowAccess(shard, true));
  std::vector<int64_t> rows;
  RETURN_IF_ERROR(shard.LocalRows(r.ids, r.num_ids, &rows));
  const uint64_t row_bytes = static_cast<uint64_t>(shard.row_elements()) * sizeof(float);
  if (r.values.size() != static_cast<uint64_t>(r.num_ids) * row_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("shard ", shard.name(), ": ", r.num_ids, " gradient rows need ",
                                                   static_cast<uint64_t>(r.num_ids) * row_bytes, " bytes but ",
                                                   r.values.size(), " arrived"));
  }
  const int64_t bad = r.non_finite >= 0 ? r.non_finite : Shard::CountNonFinite(r.values);
  if (bad > 0 && shard.options().non_finite == NON_FINITE_REJECT) return NonFinite(shard, worker, bad);
  part->skipped = bad > 0;
  part->num_ids = r.num_ids;
  part->bytes = static_cast<int64_t>(r.ids.size() + r.values.size());
  if (part->skipped) return absl::OkStatus();
  RowAccumulator sum(shard.row_elements(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) sum.Add(rows[i], r.values.data() + i * row_bytes);
  part->rows = sum.Take();
  return absl::OkStatus();
}

void PsServer::Push(const PushRequest* request, PushResponse* response, DoneCallback done) {
  std::vector<GradientView> views;
  views.reserve(static_cast<size_t>(request->gradients_size()));
  for (const ShardGradient& g : request->gradients()) {
    views.push_back({g.name(),
                     g.gradient().dtype(),
                     {g.gradient().shape().begin(), g.gradient().shape().end()},
                     g.gradient().data()});
  }
  PushGradients(request->worker_index(), request->step(), views, SparseRowsViews(*request), response, std::move(done),
                request->replica_versions());
}

void PsServer::PushGradients(int worker, int64_t step, const std::vector<GradientView>& gradients,
                             const std::vector<SparseRowsView>& sparse, PushResponse* response, DoneCallback done,
                             absl::Span<const int64_t> replica_versions) {
  if (!replica_versions.empty()) return done(ApplyForwarded(worker, gradients, sparse, replica_versions, response));
  PushPlan plan;
  absl::Status s = ValidatePush(worker, step, gradients, sparse, &plan);
  if (!s.ok()) return done(s);
  response->set_skipped_non_finite(plan.skipped);
  response->clear_versions();
  bool any_sync = false;
  std::vector<Forwarded> forwards;
  for (size_t i = 0; i < plan.parts.size(); ++i) {
    PushPlan::Part& part = plan.parts[i];
    Shard& shard = *part.shard;
    part.CountPush();
    if (part.skipped) shard.CountSkipped();
    if (shard.options().mode == UPDATE_SYNC) {
      any_sync = true;
      response->add_versions(0);  // filled when the step applies
    } else if (part.skipped) {
      response->add_versions(shard.version());
    } else {
      // The target is read with the update: an update after AttachBackup's copy is forwarded.
      int target = -1;
      const int64_t v = part.table ? shard.ApplyRowsNow(part.rows, &target) : shard.ApplyNow(part.grad, &target);
      response->add_versions(v);
      if (target >= 0) forwards.push_back({i, v, target});
    }
  }
  if (!forwards.empty()) return ForwardThenDone(gradients, sparse, forwards, std::move(done));
  if (!any_sync) return done(absl::OkStatus());
  ParkSyncPush(worker, step, response, std::move(plan), std::move(done));
}

void PsServer::ParkSyncPush(int worker, int64_t step, PushResponse* response, PushPlan plan, DoneCallback done) {
  std::vector<size_t> sync;  // indices of the sync parts in the request
  std::vector<std::shared_ptr<Shard>> sync_shards;
  for (size_t i = 0; i < plan.parts.size(); ++i) {
    if (plan.parts[i].shard->options().mode == UPDATE_SYNC) {
      sync.push_back(i);
      sync_shards.push_back(plan.parts[i].shard);
    }
  }
  const absl::Duration timeout = MaxSyncTimeout(sync_shards);
  ParkedCall::Handlers h;
  h.on_success = [response, sync](const std::vector<int64_t>& versions) {
    for (size_t k = 0; k < sync.size(); ++k) response->set_versions(static_cast<int>(sync[k]), versions[k]);
    return absl::OkStatus();
  };
  h.done = std::move(done);
  h.on_shutdown = [this] { return UnavailableStatus(); };
  h.describe_timeout = [sync_shards, worker, step, timeout] {
    std::vector<std::string> parts;
    for (const auto& s : sync_shards) {
      std::vector<int> missing = s->MissingWorkers(step);
      if (!missing.empty()) {
        parts.push_back(
            absl::StrCat("shard ", s->name(), " is missing ", MissingWorkersText(missing, s->options().num_workers)));
      }
    }
    return absl::DeadlineExceededError(absl::StrCat("sync push of worker ", worker, " for step ", step,
                                                    " timed out after ", absl::FormatDuration(timeout), ": ",
                                                    absl::StrJoin(parts, "; ")));
  };
  auto call = ParkedCall::Create(static_cast<int>(sync.size()), std::move(h));
  call->Arm(&timer_, env_->Now() + timeout);
  for (size_t k = 0; k < sync.size(); ++k) {
    PushPlan::Part& part = plan.parts[sync[k]];
    auto applied = [call, k](absl::StatusOr<int64_t> v) { call->PartDone(static_cast<int>(k), std::move(v)); };
    absl::Status s = part.table ? part.shard->AddSyncRows(worker, step, std::move(part.rows), std::move(applied))
                                : part.shard->AddSyncGradient(worker, step, part.grad, std::move(applied));
    if (!s.ok()) call->PartDone(static_cast<int>(k), s);  // a concurrent duplicate slipped past validation
  }
}

}  // namespace pstrain
