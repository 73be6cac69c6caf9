// PsServer's dynamic table shards: creation, pulls and pushes by key, checkpoints and stats. The
// rules are in ps_server.h's file comment; the table itself is ps/store/dynamic_table.h.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/platform/confined_path.h"
#include "common/platform/status_macros.h"
#include "common/plan/dynamic_key_owner.h"
#include "ps/store/dynamic_table_state.h"
#include "ps/store/ps_server.h"

namespace pstrain {
namespace {

constexpr absl::string_view kFilePrefix = "dynamic-";
constexpr absl::string_view kFileSuffix = ".dtab";

std::string EscapeTableName(const std::string& table) {
  std::string out;
  for (unsigned char c : table) {
    if (absl::ascii_isalnum(c) || c == '_' || c == '.') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  return out;
}

// The keys of `rows` (checked: 8 bytes each, every one owned by `shard`).
absl::StatusOr<std::vector<int64_t>> Keys(const KeyedRows& rows, const DynamicShardSpecProto& spec) {
  if (rows.num_keys() < 0 || rows.keys().size() != static_cast<size_t>(rows.num_keys()) * sizeof(int64_t)) {
    return absl::InvalidArgumentError(absl::StrCat("dynamic shard ", spec.shard_name(), ": ", rows.keys().size(),
                                                   " bytes of keys for num_keys ", rows.num_keys(),
                                                   "; send 8 bytes (int64, little-endian) per key"));
  }
  std::vector<int64_t> keys(static_cast<size_t>(rows.num_keys()));
  if (!keys.empty()) std::memcpy(keys.data(), rows.keys().data(), rows.keys().size());
  for (int64_t key : keys) {
    const int owner = DynamicKeyOwner(static_cast<uint64_t>(key), spec.num_shards());
    if (owner != spec.shard_index()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dynamic shard ", spec.shard_name(), " (shard ", spec.shard_index(), " of ", spec.num_shards(),
                       " of table ", spec.table_name(), ") does not own key ", key, ": shard ", owner,
                       " does; route each key to shard DynamicKeyOwner(key, ", spec.num_shards(), ")"));
    }
  }
  return keys;
}

absl::Status CheckSpec(const DynamicShardSpecProto& spec) {
  const std::string what = absl::StrCat("dynamic shard ", spec.shard_name().empty() ? "(no name)" : spec.shard_name());
  if (spec.shard_name().empty()) return absl::InvalidArgumentError("a dynamic shard needs a shard_name");
  if (spec.table_name().empty()) return absl::InvalidArgumentError(absl::StrCat(what, " needs a table_name"));
  if (spec.num_shards() < 1 || spec.shard_index() < 0 || spec.shard_index() >= spec.num_shards()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": shard_index ", spec.shard_index(), " of num_shards ",
                                                   spec.num_shards(),
                                                   " is not in [0, num_shards) with num_shards >= 1"));
  }
  return absl::OkStatus();
}

DynamicTableOptions TableOptions(const DynamicShardSpecProto& spec, const ShardOptions& opts) {
  DynamicTableOptions o;
  o.name = spec.table_name();
  o.dim = spec.dim();
  o.seed = spec.seed();
  o.initializer = spec.initializer();
  o.optimizer = opts.optimizer;
  o.admission_threshold = spec.admission_threshold();
  if (spec.filter_width() != 0) o.filter_width = spec.filter_width();
  if (spec.filter_depth() != 0) o.filter_depth = spec.filter_depth();
  o.ttl_steps = spec.ttl_steps();
  o.max_rows = spec.max_rows();
  return o;
}

}  // namespace

std::string DynamicShardFileName(const std::string& table, int index, int count) {
  return absl::StrCat(kFilePrefix, EscapeTableName(table), "-", index, "-of-", count, kFileSuffix);
}

absl::StatusOr<std::vector<std::shared_ptr<PsServer::DynamicShard>>> PsServer::MakeDynamicShards(
    const google::protobuf::RepeatedPtrField<DynamicShardSpecProto>& specs, const ShardOptions& opts,
    const std::set<std::string>& dense_names) const {
  std::vector<std::shared_ptr<DynamicShard>> made;
  if (specs.empty()) return made;
  if (opts.mode != UPDATE_ASYNC) {
    return absl::InvalidArgumentError(absl::StrCat("dynamic shard ", specs[0].shard_name(),
                                                   ": dynamic tables train in async mode only; use update_mode async"));
  }
  std::set<std::string> names;
  for (const DynamicShardSpecProto& spec : specs) {
    RETURN_IF_ERROR(CheckSpec(spec));
    if (!names.insert(spec.shard_name()).second || dense_names.count(spec.shard_name()) > 0) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", spec.shard_name(), " is listed twice"));
    }
    {
      absl::ReaderMutexLock l(&mu_);
      if (shards_.count(spec.shard_name()) > 0) {
        return absl::InvalidArgumentError(absl::StrCat("dynamic shard ", spec.shard_name(), " has the name of a shard ",
                                                       options_.task, " holds already; give it another name"));
      }
    }
    absl::StatusOr<std::unique_ptr<DynamicTable>> table = DynamicTable::Create(TableOptions(spec, opts));
    if (!table.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dynamic shard ", spec.shard_name(), ": ", table.status().message()));
    }
    auto shard = std::make_shared<DynamicShard>();
    shard->spec = spec;
    shard->table = std::move(*table);
    made.push_back(std::move(shard));
  }
  return made;
}

void PsServer::InstallDynamic(std::vector<std::shared_ptr<DynamicShard>> shards) {
  absl::MutexLock l(&mu_);
  for (auto& s : shards) dynamic_[s->spec.shard_name()] = std::move(s);
}

absl::StatusOr<std::shared_ptr<PsServer::DynamicShard>> PsServer::FindDynamic(const std::string& name) const {
  absl::ReaderMutexLock l(&mu_);
  auto it = dynamic_.find(name);
  if (it != dynamic_.end()) return it->second;
  if (shards_.count(name) > 0) {
    return absl::InvalidArgumentError(absl::StrCat("shard ", name, " on ", options_.task,
                                                   " is not a dynamic table shard; pull and push it with Pull / Push"));
  }
  return absl::NotFoundError(
      absl::StrCat(options_.task, " holds no dynamic shard ", name, "; create it with CreateShards (dynamic_shards)"));
}

absl::Status PsServer::PullKeys(const PullKeysRequest& request, PullKeysResponse* response) {
  std::vector<std::shared_ptr<DynamicShard>> shards;
  std::vector<std::vector<int64_t>> keys;
  int64_t bytes = 0;
  for (const KeyedRows& entry : request.tables()) {
    ASSIGN_OR_RETURN(std::shared_ptr<DynamicShard> shard, FindDynamic(entry.shard_name()));
    if (!entry.values().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dynamic shard ", entry.shard_name(), ": a pull sends keys only, not values"));
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> k, Keys(entry, shard->spec));
    bytes += static_cast<int64_t>(k.size()) * shard->table->dim() * static_cast<int64_t>(sizeof(float));
    if (bytes > kMaxMessageBytes) {
      return absl::InvalidArgumentError(absl::StrCat("a pull of ", entry.shard_name(),
                                                     " and the entries before it exceeds the 2 GiB message limit; "
                                                     "pull fewer keys per call"));
    }
    shards.push_back(std::move(shard));
    keys.push_back(std::move(k));
  }
  for (size_t i = 0; i < shards.size(); ++i) {
    KeyedRows* out = response->add_tables();
    out->set_shard_name(shards[i]->spec.shard_name());
    out->set_num_keys(static_cast<int64_t>(keys[i].size()));
    std::string* values = out->mutable_values();
    values->resize(keys[i].size() * static_cast<size_t>(shards[i]->table->dim()) * sizeof(float));
    RETURN_IF_ERROR(shards[i]->table->Lookup(
        keys[i], absl::Span<float>(reinterpret_cast<float*>(values->data()), values->size() / sizeof(float))));
    shards[i]->pulls.fetch_add(1, std::memory_order_relaxed);
  }
  return absl::OkStatus();
}

absl::Status PsServer::PushKeys(const PushKeysRequest& request, PushKeysResponse* response) {
  if (request.step() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("PushKeys step ", request.step(), " is negative"));
  }
  std::vector<std::shared_ptr<DynamicShard>> shards;
  std::vector<std::vector<int64_t>> keys;
  std::vector<std::vector<float>> grads;
  std::set<std::string> names;
  for (const KeyedRows& entry : request.tables()) {
    if (!names.insert(entry.shard_name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("dynamic shard ", entry.shard_name(), " is named twice in one push; send its rows once"));
    }
    ASSIGN_OR_RETURN(std::shared_ptr<DynamicShard> shard, FindDynamic(entry.shard_name()));
    ASSIGN_OR_RETURN(std::vector<int64_t> k, Keys(entry, shard->spec));
    const size_t floats = k.size() * static_cast<size_t>(shard->table->dim());
    if (entry.values().size() != floats * sizeof(float)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dynamic shard ", entry.shard_name(), ": ", entry.values().size(), " bytes of gradients for ", k.size(),
          " keys of dim ", shard->table->dim(), "; send ", floats * sizeof(float), " (float32 [num_keys, dim])"));
    }
    std::vector<float> g(floats);
    if (floats > 0) std::memcpy(g.data(), entry.values().data(), entry.values().size());
    for (size_t j = 0; j < g.size(); ++j) {
      if (!std::isfinite(g[j])) {
        return absl::InvalidArgumentError(absl::StrCat("dynamic shard ", entry.shard_name(), ": the gradient of key ",
                                                       k[j / shard->table->dim()],
                                                       " is NaN or infinite; nothing was applied"));
      }
    }
    shards.push_back(std::move(shard));
    keys.push_back(std::move(k));
    grads.push_back(std::move(g));
  }
  // Validated above: the table's own checks (sizes, finite values, step) cannot fail here, so a
  // push applies to every entry or to none.
  for (size_t i = 0; i < shards.size(); ++i) {
    RETURN_IF_ERROR(shards[i]->table->Push(keys[i], grads[i], request.step()));
    shards[i]->table->EvictExpired(request.step());
    shards[i]->pushes.fetch_add(1, std::memory_order_relaxed);
    response->add_rows(shards[i]->table->rows());
  }
  return absl::OkStatus();
}

absl::Status PsServer::SaveDynamic(const std::string& dir, SaveResponse* response) {
  std::map<std::string, std::shared_ptr<DynamicShard>> shards;
  {
    absl::ReaderMutexLock l(&mu_);
    shards = dynamic_;
  }
  for (const auto& [name, shard] : shards) {
    const DynamicShardSpecProto& spec = shard->spec;
    DynamicTableState state = shard->table->ExportState();
    const std::string file = DynamicShardFileName(spec.table_name(), spec.shard_index(), spec.num_shards());
    RETURN_IF_ERROR(env_->WriteFileAtomic(dir + "/" + file, EncodeDynamicTableState(state)));
    SavedDynamicShard* saved = response->add_dynamic_shards();
    saved->set_shard_name(name);
    saved->set_table_name(spec.table_name());
    saved->set_shard_index(spec.shard_index());
    saved->set_num_shards(spec.num_shards());
    saved->set_file(file);
    saved->set_rows(static_cast<int64_t>(state.keys.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DynamicTableState>> ReadDynamicTableFiles(Env* env, const std::string& dir,
                                                                     const std::string& table) {
  ASSIGN_OR_RETURN(std::vector<std::string> entries, env->ListDir(dir));
  // The table's files: "dynamic-<escaped table>-<i>-of-<n>.dtab", all with one n.
  const std::string prefix = absl::StrCat(kFilePrefix, EscapeTableName(table), "-");
  std::map<int, std::string> files;
  int saved_count = -1;
  for (const std::string& entry : entries) {
    if (!absl::StartsWith(entry, prefix) || !absl::EndsWith(entry, kFileSuffix)) continue;
    absl::string_view rest(entry);
    rest.remove_prefix(prefix.size());
    rest.remove_suffix(kFileSuffix.size());
    std::vector<absl::string_view> parts = absl::StrSplit(rest, "-of-");
    int index = -1, count = -1;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &index) || !absl::SimpleAtoi(parts[1], &count) || count < 1 ||
        index < 0 || index >= count || DynamicShardFileName(table, index, count) != entry) {
      continue;  // another table's file whose escaped name starts like this one's
    }
    if (saved_count != -1 && count != saved_count) {
      return absl::DataLossError(absl::StrCat("checkpoint ", dir, " holds files of dynamic table ", table, " saved as ",
                                              saved_count, " and as ", count, " shards; it was written by two runs"));
    }
    saved_count = count;
    files[index] = entry;
  }
  if (saved_count == -1) {
    return absl::NotFoundError(absl::StrCat("checkpoint ", dir, " holds no file of dynamic table ", table, " (",
                                            DynamicShardFileName(table, 0, 1),
                                            " or the like); was it saved with this table?"));
  }
  std::vector<DynamicTableState> saved;
  for (int i = 0; i < saved_count; ++i) {
    auto it = files.find(i);
    if (it == files.end()) {
      return absl::NotFoundError(absl::StrCat(
          "checkpoint ", dir, " lacks ", DynamicShardFileName(table, i, saved_count), " of dynamic table ", table));
    }
    ASSIGN_OR_RETURN(std::string bytes,
                     env->ReadRegularFile(dir + "/" + it->second, std::numeric_limits<int64_t>::max()));
    absl::StatusOr<DynamicTableState> state = DecodeDynamicTableState(bytes);
    if (!state.ok()) {
      return absl::Status(state.status().code(), absl::StrCat(dir, "/", it->second, ": ", state.status().message()));
    }
    saved.push_back(std::move(*state));
  }
  return saved;
}

absl::Status PsServer::RestoreDynamic(const std::string& dir, std::vector<std::shared_ptr<DynamicShard>>& shards) {
  for (const std::shared_ptr<DynamicShard>& shard : shards) {
    const DynamicShardSpecProto& spec = shard->spec;
    ASSIGN_OR_RETURN(std::vector<DynamicTableState> saved, ReadDynamicTableFiles(env_, dir, spec.table_name()));
    absl::StatusOr<std::vector<DynamicTableState>> resharded = ReshardDynamicTableStates(saved, spec.num_shards());
    if (!resharded.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dynamic table ", spec.table_name(), " in ", dir, ": ", resharded.status().message()));
    }
    absl::Status restored = shard->table->RestoreState((*resharded)[spec.shard_index()]);
    if (!restored.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dynamic shard ", spec.shard_name(), " from ", dir, ": ", restored.message()));
    }
  }
  return absl::OkStatus();
}

void PsServer::DynamicStats(PsStatsResponse* response) const {
  std::map<std::string, std::shared_ptr<DynamicShard>> shards;
  {
    absl::ReaderMutexLock l(&mu_);
    shards = dynamic_;
  }
  for (const auto& [name, shard] : shards) {
    const DynamicTableCounters c = shard->table->counters();
    DynamicShardStats* s = response->add_dynamic_shards();
    s->set_name(name);
    s->set_rows(c.rows);
    s->set_created(c.created);
    s->set_evicted_ttl(c.evicted_ttl);
    s->set_evicted_cap(c.evicted_cap);
    s->set_admission_dropped_updates(c.admission_dropped_updates);
    s->set_lookups(c.lookups);
    s->set_lookups_missing(c.lookups_missing);
    s->set_pushed_rows(c.pushed_rows);
    s->set_memory_bytes(shard->table->MemoryBytes());
    s->set_pulls(shard->pulls.load(std::memory_order_relaxed));
    s->set_pushes(shard->pushes.load(std::memory_order_relaxed));
  }
}

}  // namespace pstrain
