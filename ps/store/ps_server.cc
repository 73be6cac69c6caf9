#include "ps/store/ps_server.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/checkpoint/checkpoint_reader.h"
#include "common/plan/memory_budget.h"
#include "common/platform/checked_math.h"
#include "common/platform/status_macros.h"
#include "common/wire/protocol_version.h"
#include "ps/store/initializers.h"
#include "ps/store/parked_call.h"
#include "ps/store/shard_loader.h"

namespace pstrain {

PsServer::PsServer(Options options)
    : options_(std::move(options)), env_(options_.env != nullptr ? options_.env : Env::Default()), timer_(env_) {}

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
  // Forwards queued or retrying an unreachable backup end: their pushes are answered UNAVAILABLE.
  absl::MutexLock l(&mu_);
  for (auto& [ps, link] : links_) link->Stop();
  for (auto& link : retired_links_) link->Stop();
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
  RETURN_IF_ERROR(CheckMemoryBudget(request.shards(), static_cast<int>(opts.optimizer->SlotNames().size())));
  std::vector<std::shared_ptr<Shard>> created;
  std::set<std::string> names;
  for (const ShardSpecProto& spec : request.shards()) {
    if (!names.insert(spec.shard_name()).second) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", spec.shard_name(), " is listed twice"));
    }
    {
      absl::ReaderMutexLock l(&mu_);
      if (dynamic_.count(spec.shard_name()) > 0) {
        return absl::InvalidArgumentError(absl::StrCat("shard ", spec.shard_name(), " has the name of a dynamic shard ",
                                                       options_.task, " holds; give it another name"));
      }
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> shape, ShardShape(spec));
    if (spec.sparse() && spec.full_shape_size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", spec.shard_name(), ": embedding table ",
                                                     spec.variable_name(), " must be 2-D [rows, dim], not ",
                                                     ShapeString(spec.full_shape())));
    }
    if (spec.sparse() && spec.non_trainable()) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", spec.shard_name(), ": embedding table ",
                                                     spec.variable_name(),
                                                     " is marked non-trainable; only dense variables can be"));
    }
    const ShardOptions shard_opts = OptionsForShard(opts, spec);
    const std::vector<std::string> slot_names = shard_opts.optimizer->SlotNames();
    // A table shard never travels whole, so only dense shards must fit one message.
    if (!spec.sparse() && NumElements(shape) * 4 > kMaxMessageBytes) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", spec.shard_name(), " of shape ", ShapeString(shape),
                                                     " exceeds the 2 GiB message limit; partition the variable "
                                                     "(partitioner max_size)"));
    }
    Tensor values(DType::kFloat32, shape);
    if (request.initialize()) RETURN_IF_ERROR(InitializeRows(spec, &values));
    std::vector<Tensor> slots;
    for (size_t i = 0; i < slot_names.size(); ++i) {
      Tensor slot(DType::kFloat32, shape);
      const float init = shard_opts.optimizer->SlotInitialValue(static_cast<int>(i));
      if (init != 0) std::fill(slot.flat().begin(), slot.flat().end(), init);
      slots.push_back(std::move(slot));
    }
    created.push_back(std::make_shared<Shard>(spec, shard_opts, std::move(values), std::move(slots), 0));
  }
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<DynamicShard>> dynamic,
                   MakeDynamicShards(request.dynamic_shards(), opts, names));
  RETURN_IF_ERROR(AssignRoles(created, request.initialize()));
  Install(std::move(created));
  InstallDynamic(std::move(dynamic));
  return absl::OkStatus();
}

absl::Status PsServer::CheckMemoryBudget(const google::protobuf::RepeatedPtrField<ShardSpecProto>& specs,
                                         int slots) const {
  if (options_.memory_budget_bytes <= 0) return absl::OkStatus();
  const std::string what = absl::StrCat("the shards of ", options_.task);
  int64_t total = 0;
  std::set<std::string> replaced;
  for (const ShardSpecProto& spec : specs) {
    ASSIGN_OR_RETURN(std::vector<int64_t> shape, ShardShape(spec));
    ASSIGN_OR_RETURN(int64_t bytes, CheckedNumBytes(shape, sizeof(float), spec.shard_name()));
    ASSIGN_OR_RETURN(bytes, CheckedSizeProduct(bytes, 1 + (spec.non_trainable() ? 0 : slots), what));
    ASSIGN_OR_RETURN(total, CheckedSizeSum(total, bytes, what));
    replaced.insert(spec.shard_name());
  }
  {
    absl::ReaderMutexLock l(&mu_);
    for (const auto& [name, shard] : shards_) {
      if (replaced.count(name) > 0) continue;
      const int64_t held = static_cast<int64_t>(shard->num_bytes()) *
                           (1 + static_cast<int64_t>(shard->options().optimizer->SlotNames().size()));
      ASSIGN_OR_RETURN(total, CheckedSizeSum(total, held, what));
    }
  }
  return pstrain::CheckMemoryBudget(
      options_.task, total, absl::StrCat("values and optimizer slots of its shards"), options_.memory_budget_bytes,
      absl::StrCat("give pstrain-ps a larger ", kMemoryBudgetFlag, ", add ps tasks, or partition the variables"));
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
    total->set_rows_pulled(total->rows_pulled() + s.rows_pulled());
    total->set_rows_pushed(total->rows_pushed() + s.rows_pushed());
    total->set_version(first ? s.version() : std::min(total->version(), s.version()));
    if (shard->is_backup()) {
      s.set_backup(true);
      total->set_backup_shards(total->backup_shards() + 1);
    }
    first = false;
    *response->add_shards() = std::move(s);
  }
  DynamicStats(response);
  return absl::OkStatus();
}

}  // namespace pstrain
