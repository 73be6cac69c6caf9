// PsServer's pull path: waiting for versions without blocking, then answering with the values
// (unary) or pooled snapshots (streaming). See ps_server.h.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/platform/status_macros.h"
#include "ps/store/parked_call.h"
#include "ps/store/ps_server.h"

namespace pstrain {

absl::Status PsServer::PlanPull(const PullRequest& request, PullPlan* plan) const {
  std::vector<std::string> names(request.shard_names().begin(), request.shard_names().end());
  for (const SparseRows& r : request.sparse()) names.push_back(r.shard_name());
  ASSIGN_OR_RETURN(plan->shards, Lookup(names));
  const size_t dense = static_cast<size_t>(request.shard_names_size());
  int64_t bytes = 0;
  plan->rows.resize(plan->shards.size() - dense);
  for (size_t i = 0; i < plan->shards.size(); ++i) {
    const Shard& shard = *plan->shards[i];
    RETURN_IF_ERROR(CheckNotBackup(shard));
    RETURN_IF_ERROR(CheckRowAccess(shard, i >= dense));
    if (i < dense) {
      bytes += static_cast<int64_t>(shard.num_bytes());
      continue;
    }
    const SparseRows& r = request.sparse(static_cast<int>(i - dense));
    RETURN_IF_ERROR(shard.LocalRows(r.ids(), r.num_ids(), &plan->rows[i - dense]));
    bytes += r.num_ids() * shard.row_elements() * static_cast<int64_t>(sizeof(float));
  }
  if (bytes > kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("pull of ", plan->shards.size(), " shards (", bytes,
                                                   " bytes) exceeds the 2 GiB message limit; pull fewer "
                                                   "shards or rows per call"));
  }
  return absl::OkStatus();
}

void PsServer::WhenPullReady(const PullRequest* request, std::function<absl::Status(const PullPlan&)> ready,
                             DoneCallback done) {
  auto plan = std::make_shared<PullPlan>();
  if (absl::Status s = PlanPull(*request, plan.get()); !s.ok()) return done(s);
  std::vector<std::shared_ptr<Shard>> lagging;
  for (const auto& s : plan->shards) {
    if (s->version() < request->min_version()) lagging.push_back(s);
  }
  if (lagging.empty()) return done(ready(*plan));
  const int64_t min_version = request->min_version();
  ParkedCall::Handlers h;
  h.on_success = [plan, ready = std::move(ready)](const std::vector<int64_t>&) { return ready(*plan); };
  h.done = std::move(done);
  h.on_shutdown = [this] { return UnavailableStatus(); };
  const absl::Duration timeout = MaxSyncTimeout(lagging);
  h.describe_timeout = [lagging, min_version, timeout] {
    std::vector<std::string> parts;
    for (const auto& s : lagging) {
      const int64_t v = s->version();
      if (v >= min_version) continue;
      std::string part = absl::StrCat("shard ", s->name(), " is at version ", v);
      if (s->options().mode == UPDATE_SYNC) {
        absl::StrAppend(&part, " (step ", v, " is missing ",
                        MissingWorkersText(s->MissingWorkers(v), s->options().num_workers), ")");
      }
      parts.push_back(part);
    }
    return absl::DeadlineExceededError(absl::StrCat("pull timed out after ", absl::FormatDuration(timeout),
                                                    " waiting for version ", min_version, ": ",
                                                    absl::StrJoin(parts, "; ")));
  };
  auto call = ParkedCall::Create(static_cast<int>(lagging.size()), std::move(h));
  call->Arm(&timer_, env_->Now() + timeout);
  for (size_t i = 0; i < lagging.size(); ++i) {
    lagging[i]->WhenVersionAtLeast(min_version, [call, i](absl::Status s) {
      if (s.ok()) {
        call->PartDone(static_cast<int>(i), int64_t{0});
      } else {
        call->PartDone(static_cast<int>(i), s);
      }
    });
  }
}

void PsServer::Pull(const PullRequest* request, PullResponse* response, DoneCallback done) {
  WhenPullReady(
      request,
      [request, response](const PullPlan& plan) {
        const size_t dense = static_cast<size_t>(request->shard_names_size());
        response->clear_values();
        response->clear_sparse();
        for (size_t i = 0; i < dense; ++i) plan.shards[i]->Read(response->add_values());
        for (size_t i = dense; i < plan.shards.size(); ++i) {
          const Shard& shard = *plan.shards[i];
          const std::vector<int64_t>& rows = plan.rows[i - dense];
          SparseRows* out = response->add_sparse();
          out->set_shard_name(shard.name());
          out->set_num_ids(static_cast<int64_t>(rows.size()));
          std::string* values = out->mutable_values();
          values->resize(rows.size() * static_cast<size_t>(shard.row_elements()) * sizeof(float));
          out->set_version(shard.GatherRows(rows, values->data()));
        }
        return absl::OkStatus();
      },
      std::move(done));
}

void PsServer::PullSnapshots(const PullRequest* request, PulledCallback done) {
  auto pulled = std::make_shared<std::vector<PulledTensor>>();
  WhenPullReady(
      request,
      [request, pulled](const PullPlan& plan) {
        const size_t dense = static_cast<size_t>(request->shard_names_size());
        for (size_t i = 0; i < plan.shards.size(); ++i) {
          const Shard& shard = *plan.shards[i];
          PulledTensor t;
          t.name = shard.name();
          if (i < dense) {
            t.shape = shard.shape();
            t.values = shard.SnapshotValues(&t.version);
          } else {
            // A table's rows: gathered into a buffer of their own (never the whole shard).
            const std::vector<int64_t>& rows = plan.rows[i - dense];
            t.num_ids = static_cast<int64_t>(rows.size());
            t.shape = {t.num_ids, shard.row_elements()};
            auto gathered = std::make_shared<Tensor>(DType::kFloat32, t.shape);
            t.version = shard.GatherRows(rows, reinterpret_cast<char*>(gathered->raw()));
            t.values = std::move(gathered);
          }
          pulled->push_back(std::move(t));
        }
        return absl::OkStatus();
      },
      [pulled, done = std::move(done)](absl::Status s) { done(std::move(s), std::move(*pulled)); });
}

}  // namespace pstrain
