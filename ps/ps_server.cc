#include "ps/ps_server.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/protocol_version.h"
#include "common/status_macros.h"
#include "ps/checkpoint_reader.h"
#include "ps/initializers.h"
#include "ps/parked_call.h"
#include "ps/shard_loader.h"

namespace pstrain {

// A validated push: the shards and where each gradient's bytes are (nullptr: skipped).
struct PsServer::PushPlan {
  std::vector<std::shared_ptr<Shard>> shards;
  std::vector<const char*> grads;
  int64_t skipped = 0;
};

PsServer::PsServer(Options options)
    : options_(std::move(options)), env_(options_.env != nullptr ? options_.env : Env::Default()) {}

PsServer::~PsServer() { Shutdown(); }

absl::Status PsServer::UnavailableStatus() const {
  return absl::UnavailableError(absl::StrCat(options_.task, " is shutting down"));
}

void PsServer::Shutdown() {
  timer_.Shutdown();
  std::map<std::string, std::shared_ptr<Shard>> shards;
  {
    absl::MutexLock l(&mu_);
    shards = shards_;
  }
  for (auto& [name, shard] : shards) shard->Abort(UnavailableStatus());
}

absl::Status PsServer::Handshake(const HandshakeRequest& request, HandshakeResponse* response) {
  RETURN_IF_ERROR(
      CheckProtocolVersion(request.protocol_version(), request.caller().empty() ? "the caller" : request.caller()));
  response->set_protocol_version(kProtocolVersion);
  response->set_task(options_.task);
  response->set_build(absl::StrCat("pstrain-ps protocol ", kProtocolVersion));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::shared_ptr<Shard>>> PsServer::Lookup(const std::vector<std::string>& names) const {
  std::vector<std::shared_ptr<Shard>> out;
  std::set<std::string> seen;
  absl::ReaderMutexLock l(&mu_);
  for (const std::string& name : names) {
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", name, " is named twice in one request"));
    }
    auto it = shards_.find(name);
    if (it == shards_.end()) {
      return absl::NotFoundError(absl::StrCat("shard ", name, " is not held by ", options_.task, " (it holds ",
                                              shards_.size(),
                                              " shards); create it with CreateShards or check the variable plan"));
    }
    out.push_back(it->second);
  }
  return out;
}

absl::StatusOr<ShardOptions> PsServer::MakeOptions(const OptimizerProto& optimizer, UpdateMode mode, int num_workers,
                                                   int64_t sync_timeout_ms, NonFinitePolicy non_finite) const {
  ShardOptions o;
  ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> opt, Optimizer::Create(optimizer));
  o.optimizer = std::move(opt);
  if (mode != UPDATE_ASYNC && mode != UPDATE_SYNC) return absl::InvalidArgumentError("unknown update mode");
  o.mode = mode;
  if (mode == UPDATE_SYNC && num_workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("sync mode needs num_workers >= 1, got ", num_workers));
  }
  o.num_workers = std::max(1, num_workers);
  if (sync_timeout_ms < 0) return absl::InvalidArgumentError("sync_timeout_ms must be >= 0");
  o.sync_timeout = sync_timeout_ms == 0 ? options_.default_timeout : absl::Milliseconds(sync_timeout_ms);
  o.non_finite = non_finite;
  o.update_latency = options_.update_latency;
  return o;
}

void PsServer::Install(std::vector<std::shared_ptr<Shard>> shards) {
  std::vector<std::shared_ptr<Shard>> replaced;
  {
    absl::MutexLock l(&mu_);
    for (auto& s : shards) {
      auto it = shards_.find(s->name());
      if (it != shards_.end()) replaced.push_back(std::move(it->second));
      shards_[s->name()] = std::move(s);
    }
  }
  for (auto& s : replaced) s->Abort(absl::AbortedError(absl::StrCat("shard ", s->name(), " was re-created")));
}

absl::Status PsServer::CreateShards(const CreateShardsRequest& request, CreateShardsResponse* response) {
  RETURN_IF_ERROR(CheckProtocolVersion(request.protocol_version(), "the caller of CreateShards"));
  ASSIGN_OR_RETURN(ShardOptions opts, MakeOptions(request.optimizer(), request.mode(), request.num_workers(),
                                                  request.sync_timeout_ms(), request.non_finite()));
  const std::vector<std::string> slot_names = opts.optimizer->SlotNames();
  std::vector<std::shared_ptr<Shard>> created;
  std::set<std::string> names;
  for (const ShardSpecProto& spec : request.shards()) {
    if (!names.insert(spec.shard_name()).second) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", spec.shard_name(), " is listed twice"));
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> shape, ShardShape(spec));
    if (NumElements(shape) * 4 > kMaxMessageBytes) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", spec.shard_name(), " of shape ", ShapeString(shape),
                                                     " exceeds the 2 GiB message limit; partition the variable "
                                                     "(partitioner max_size)"));
    }
    Tensor values(DType::kFloat32, shape);
    if (request.initialize()) RETURN_IF_ERROR(InitializeRows(spec, &values));
    std::vector<Tensor> slots;
    for (size_t i = 0; i < slot_names.size(); ++i) {
      Tensor slot(DType::kFloat32, shape);
      const float init = opts.optimizer->SlotInitialValue(static_cast<int>(i));
      if (init != 0) std::fill(slot.flat().begin(), slot.flat().end(), init);
      slots.push_back(std::move(slot));
    }
    created.push_back(std::make_shared<Shard>(spec, opts, std::move(values), std::move(slots), 0));
  }
  Install(std::move(created));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::shared_ptr<Tensor>>> PsServer::GradientBuffers(const PushRequest& header) const {
  std::vector<std::string> names;
  for (const ShardGradient& g : header.gradients()) names.push_back(g.name());
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Shard>> shards, Lookup(names));
  std::vector<std::shared_ptr<Tensor>> buffers;
  for (int i = 0; i < header.gradients_size(); ++i) {
    const TensorProto& g = header.gradients(i).gradient();
    const std::vector<int64_t> shape(g.shape().begin(), g.shape().end());
    RETURN_IF_ERROR(shards[i]->CheckGradient(g.dtype(), shape, shards[i]->num_bytes()));
    buffers.push_back(shards[i]->GradientBuffer());
  }
  return buffers;
}

std::vector<GradientView> GradientViews(const PushRequest& header, const std::vector<std::shared_ptr<Tensor>>& buffers,
                                        const std::vector<int64_t>& non_finite) {
  std::vector<GradientView> views;
  for (int i = 0; i < header.gradients_size(); ++i) {
    const ShardGradient& g = header.gradients(i);
    const Tensor& b = *buffers[i];
    views.push_back({g.name(),
                     g.gradient().dtype(),
                     {g.gradient().shape().begin(), g.gradient().shape().end()},
                     absl::string_view(reinterpret_cast<const char*>(b.raw()), b.num_bytes()),
                     non_finite.empty() ? -1 : non_finite[i]});
  }
  return views;
}

absl::Status PsServer::ValidatePush(int worker, int64_t step, const std::vector<GradientView>& gradients,
                                    PushPlan* plan) const {
  std::vector<std::string> names;
  for (const GradientView& g : gradients) names.push_back(g.name);
  ASSIGN_OR_RETURN(plan->shards, Lookup(names));
  for (size_t i = 0; i < gradients.size(); ++i) {
    Shard& shard = *plan->shards[i];
    const GradientView& g = gradients[i];
    absl::Status s = shard.CheckGradient(g.dtype, g.shape, g.data.size());
    if (s.ok() && shard.options().mode == UPDATE_SYNC) s = shard.CheckSyncPush(worker, step);
    const int64_t bad = !s.ok() ? 0 : g.non_finite >= 0 ? g.non_finite : Shard::CountNonFinite(g.data);
    if (bad > 0 && shard.options().non_finite == NON_FINITE_REJECT) {
      s = absl::InvalidArgumentError(absl::StrCat("shard ", shard.name(), ": gradient from worker ", worker, " has ",
                                                  bad,
                                                  " non-finite values (NaN/Inf); push rejected, shard unchanged "
                                                  "(non_finite NON_FINITE_SKIP skips such gradients instead)"));
    }
    if (!s.ok()) {
      shard.CountRejected();
      return s;
    }
    plan->grads.push_back(bad > 0 ? nullptr : g.data.data());
    if (bad > 0) plan->skipped++;
  }
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
  PushGradients(request->worker_index(), request->step(), views, response, std::move(done));
}

void PsServer::PushGradients(int worker, int64_t step, const std::vector<GradientView>& gradients,
                             PushResponse* response, DoneCallback done) {
  PushPlan plan;
  absl::Status s = ValidatePush(worker, step, gradients, &plan);
  if (!s.ok()) return done(s);
  response->set_skipped_non_finite(plan.skipped);
  response->clear_versions();
  bool any_sync = false;
  for (size_t i = 0; i < plan.shards.size(); ++i) {
    Shard& shard = *plan.shards[i];
    shard.CountPush(static_cast<int64_t>(shard.num_bytes()));
    if (plan.grads[i] == nullptr) shard.CountSkipped();
    if (shard.options().mode == UPDATE_SYNC) {
      any_sync = true;
      response->add_versions(0);  // filled when the step applies
    } else {
      response->add_versions(plan.grads[i] == nullptr ? shard.version() : shard.ApplyNow(plan.grads[i]));
    }
  }
  if (!any_sync) return done(absl::OkStatus());
  ParkSyncPush(worker, step, response, std::move(plan), std::move(done));
}

void PsServer::ParkSyncPush(int worker, int64_t step, PushResponse* response, PushPlan plan, DoneCallback done) {
  std::vector<size_t> sync;  // indices of the sync shards in the request
  std::vector<std::shared_ptr<Shard>> sync_shards;
  for (size_t i = 0; i < plan.shards.size(); ++i) {
    if (plan.shards[i]->options().mode == UPDATE_SYNC) {
      sync.push_back(i);
      sync_shards.push_back(plan.shards[i]);
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
  call->Arm(&timer_, absl::Now() + timeout);
  for (size_t k = 0; k < sync.size(); ++k) {
    absl::Status s = sync_shards[k]->AddSyncGradient(
        worker, step, plan.grads[sync[k]],
        [call, k](absl::StatusOr<int64_t> v) { call->PartDone(static_cast<int>(k), std::move(v)); });
    if (!s.ok()) call->PartDone(static_cast<int>(k), s);  // a concurrent duplicate slipped past validation
  }
}

absl::Status PsServer::GetStats(const PsStatsRequest& request, PsStatsResponse* response) {
  std::map<std::string, std::shared_ptr<Shard>> shards;
  {
    absl::ReaderMutexLock l(&mu_);
    shards = shards_;
  }
  ShardStats* total = response->mutable_total();
  total->set_name("total");
  bool first = true;
  for (const auto& [name, shard] : shards) {
    ShardStats s = shard->Stats();
    total->set_pulls(total->pulls() + s.pulls());
    total->set_pushes(total->pushes() + s.pushes());
    total->set_bytes_in(total->bytes_in() + s.bytes_in());
    total->set_bytes_out(total->bytes_out() + s.bytes_out());
    total->set_rejected_pushes(total->rejected_pushes() + s.rejected_pushes());
    total->set_skipped_non_finite(total->skipped_non_finite() + s.skipped_non_finite());
    total->set_update_seconds_total(total->update_seconds_total() + s.update_seconds_total());
    total->set_version(first ? s.version() : std::min(total->version(), s.version()));
    first = false;
    *response->add_shards() = std::move(s);
  }
  return absl::OkStatus();
}

}  // namespace pstrain
