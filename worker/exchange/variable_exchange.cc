#include "worker/exchange/variable_exchange.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/plan/dynamic_key_owner.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor_proto.h"
#include "common/wire/ps_trouble.h"
#include "common/wire/sync_push_status.h"

namespace pstrain {
namespace {

absl::Status PlanMismatch(const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("the variable plan does not fit the job's model: ", why));
}

absl::Status AsyncOnly(const std::string& table, const std::string& what) {
  return absl::FailedPreconditionError(absl::StrCat("dynamic table ", table, " trains in async mode only; ", what,
                                                    " is sync mode (use update_mode async)"));
}

// bytes = the ids at `positions` of `ids` (8 bytes each, little-endian as in memory): the wire form
// of a step's row ids (SparseRows) and keys (KeyedRows).
void GatherIdBytes(const std::vector<int64_t>& ids, const std::vector<int64_t>& positions, std::string* bytes) {
  bytes->resize(positions.size() * sizeof(int64_t));
  for (size_t k = 0; k < positions.size(); ++k) std::memcpy(&(*bytes)[k * 8], &ids[positions[k]], sizeof(int64_t));
}

// bytes = the rows at `positions` of `rows` (a [U, dim] float32 gradient), in that order.
void GatherRowBytes(const Tensor& rows, const std::vector<int64_t>& positions, int64_t dim, std::string* bytes) {
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  bytes->resize(positions.size() * row_bytes);
  const char* src = reinterpret_cast<const char*>(rows.raw());
  for (size_t k = 0; k < positions.size(); ++k) {
    std::memcpy(&(*bytes)[k * row_bytes], src + positions[k] * row_bytes, row_bytes);
  }
}

// Writes the keys at `positions` of `ids` into `rows`.
void SetKeys(const std::vector<int64_t>& ids, const std::vector<int64_t>& positions, KeyedRows* rows) {
  rows->set_num_keys(static_cast<int64_t>(positions.size()));
  GatherIdBytes(ids, positions, rows->mutable_keys());
}

// Copies the pulled rows `values` of shard `got` (the k-th row to row positions[k] of `params`, a
// [U, dim] table) after checking the ps answered for shard `want` with one row per position.
absl::Status ScatterPulledRows(const std::string& peer, const std::string& want, const std::string& got,
                               const std::string& values, const std::vector<int64_t>& positions, int64_t dim,
                               Tensor* params) {
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  if (got != want || values.size() != positions.size() * row_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(peer, " sent ", values.size(), " bytes of ", got, "; expected ",
                                                   positions.size(), " rows of ", want, " (",
                                                   positions.size() * row_bytes, " bytes)"));
  }
  char* dst = reinterpret_cast<char*>(params->raw());
  for (size_t k = 0; k < positions.size(); ++k) {
    std::memcpy(dst + positions[k] * row_bytes, values.data() + k * row_bytes, row_bytes);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<VariableExchange>> VariableExchange::Create(const std::vector<VariableSpec>& variables,
                                                                           const VariablePlanProto& plan,
                                                                           std::vector<PsClient*> ps) {
  if (ps.empty()) return absl::InvalidArgumentError("no ps addresses were given");
  if (plan.variables_size() != static_cast<int>(variables.size())) {
    return PlanMismatch(
        absl::StrCat("the model has ", variables.size(), " variables, the plan ", plan.variables_size()));
  }
  std::unique_ptr<VariableExchange> ex(new VariableExchange(std::move(ps)));
  ex->variables_ = variables;
  ex->slots_.resize(ex->ps_.size());
  ex->table_slots_.resize(ex->ps_.size());
  ex->keyed_slots_.resize(ex->ps_.size());
  for (int v = 0; v < plan.variables_size(); ++v) {
    const auto& pv = plan.variables(v);
    const VariableSpec& spec = variables[v];
    const std::vector<int64_t> shape(pv.shape().begin(), pv.shape().end());
    if (pv.name() != spec.name || shape != spec.shape || pv.dtype() != DT_FLOAT || pv.sparse() != spec.sparse ||
        pv.has_dynamic() != spec.dynamic.has_value()) {
      auto kind = [](bool sparse, bool dynamic) { return dynamic ? "dynamic table " : sparse ? "table " : ""; };
      return PlanMismatch(absl::StrCat("plan variable ", v, " is ", kind(pv.sparse(), pv.has_dynamic()), pv.name(), " ",
                                       ShapeString(shape), ", the model's is ",
                                       kind(spec.sparse, spec.dynamic.has_value()), spec.name, " float32 ",
                                       ShapeString(spec.shape)));
    }
    const int64_t rows = spec.shape.empty() ? 1 : spec.shape[0];
    ex->row_floats_.push_back(spec.shape.empty() ? 1 : NumElements(spec.shape) / std::max<int64_t>(rows, 1));
    for (const ShardSpecProto& s : pv.shards()) {
      if (s.ps_task() < 0 || s.ps_task() >= ex->num_ps()) {
        return absl::InvalidArgumentError(absl::StrCat("shard ", s.shard_name(), " lives on ps task ", s.ps_task(),
                                                       " but only ", ex->num_ps(), " ps addresses were given"));
      }
    }
    RETURN_IF_ERROR(pv.has_dynamic() ? ex->AddKeyed(v, pv) : spec.sparse ? ex->AddTable(v, pv) : ex->AddDense(v, pv));
  }
  ex->pool_ = std::make_unique<ThreadPool>(ex->num_ps() * (ex->keyed_.empty() ? 1 : 2));
  ex->pulled_.resize(ex->ps_.size());
  ex->pull_requests_.resize(ex->ps_.size());
  ex->push_requests_.resize(ex->ps_.size());
  ex->acked_.assign(ex->ps_.size(), 0);
  ex->pull_keys_requests_.resize(ex->ps_.size());
  ex->pull_keys_responses_.resize(ex->ps_.size());
  ex->push_keys_requests_.resize(ex->ps_.size());
  ex->keyed_acked_.assign(ex->ps_.size(), 0);
  for (size_t p = 0; p < ex->ps_.size(); ++p) {
    ex->pulled_[p].assign(ex->slots_[p].size() + ex->table_slots_[p].size(), 0);
    for (const ShardSlot& slot : ex->slots_[p]) {
      ex->pull_requests_[p].add_shard_names(slot.name);
      auto* g = ex->push_requests_[p].add_gradients();
      g->set_name(slot.name);
      g->mutable_gradient()->set_dtype(DT_FLOAT);
    }
    for (const TableSlot& slot : ex->table_slots_[p]) {
      ex->pull_requests_[p].add_sparse()->set_shard_name(slot.name);
      ex->push_requests_[p].add_sparse()->set_shard_name(slot.name);
    }
    for (const KeyedSlot& slot : ex->keyed_slots_[p]) {
      ex->pull_keys_requests_[p].add_tables()->set_shard_name(slot.name);
      ex->push_keys_requests_[p].add_tables()->set_shard_name(slot.name);
    }
  }
  return ex;
}

absl::Status VariableExchange::AddDense(int v, const VariablePlanProto::Variable& pv) {
  const VariableSpec& spec = variables_[v];
  const int64_t rows = spec.shape.empty() ? 1 : spec.shape[0];
  int64_t next_row = 0;
  for (const ShardSpecProto& s : pv.shards()) {
    if (s.row_offset() != next_row || s.rows() <= 0 || s.row_offset() + s.rows() > rows || s.row_stride() > 1) {
      return PlanMismatch(absl::StrCat("shard ", s.shard_name(), " covers rows [", s.row_offset(), ", ",
                                       s.row_offset() + s.rows(), ") of ", spec.name, ", expected to start at ",
                                       next_row, " within ", rows, " rows"));
    }
    slots_[s.ps_task()].push_back({s.shard_name(), v, s.row_offset(), s.rows()});
    next_row += s.rows();
  }
  if (next_row != rows)
    return PlanMismatch(absl::StrCat("the shards of ", spec.name, " cover ", next_row, " of ", rows, " rows"));
  return absl::OkStatus();
}

absl::Status VariableExchange::AddTable(int v, const VariablePlanProto::Variable& pv) {
  ASSIGN_OR_RETURN(TableLayout layout, TableLayout::FromPlan(pv));
  const int table = static_cast<int>(tables_.size());
  for (int i = 0; i < pv.shards_size(); ++i) {
    const ShardSpecProto& s = pv.shards(i);
    table_slots_[s.ps_task()].push_back({s.shard_name(), v, table, i});
  }
  tables_.push_back({v, std::move(layout), {}});
  return absl::OkStatus();
}

absl::Status VariableExchange::AddKeyed(int v, const VariablePlanProto::Variable& pv) {
  if (!pv.sparse() || pv.shape_size() != 2 || pv.shape(1) < 1 || pv.shards_size() < 1) {
    return PlanMismatch(absl::StrCat("dynamic table ", pv.name(),
                                     " must be a 2-D [max_rows, dim] table with shards, not ", ShapeString(pv.shape()),
                                     " in ", pv.shards_size(), " shards"));
  }
  const int table = static_cast<int>(keyed_.size());
  for (int i = 0; i < pv.shards_size(); ++i) {
    const ShardSpecProto& s = pv.shards(i);
    if (s.shard_name().empty())
      return PlanMismatch(absl::StrCat("shard ", i, " of dynamic table ", pv.name(), " has no name"));
    keyed_slots_[s.ps_task()].push_back({s.shard_name(), v, table, i});
  }
  keyed_.push_back({v, pv.name(), pv.shape(1), std::vector<std::vector<int64_t>>(pv.shards_size())});
  return absl::OkStatus();
}

absl::Status VariableExchange::ForEachPs(const std::function<absl::Status(int)>& fn,
                                         const std::function<absl::Status(int)>& keyed) {
  const int n = num_ps();
  // Task t < n: ps t's dense and range-table shards; task n + p: ps p's dynamic shards.
  std::vector<absl::Status> results(keyed ? 2 * n : n);
  pool_->Run(static_cast<int>(results.size()), [&](int t) {
    const int p = t % n;
    if (t < n) {
      results[t] = slots_[p].empty() && table_slots_[p].empty() ? absl::OkStatus() : fn(p);
    } else {
      results[t] = keyed_slots_[p].empty() ? absl::OkStatus() : keyed(p);
    }
  });
  for (size_t t = 0; t < results.size(); ++t) {
    // A ps that is gone, silent or restarted without its shards: the chief re-queues the closure
    // and checks that ps (common/wire/ps_trouble.h); this worker stays configured.
    if (IsPsTrouble(results[t])) return PsTroubleStatus(static_cast<int>(t) % n, results[t]);
  }
  for (const absl::Status& s : results) RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

absl::Status VariableExchange::GroupIds(const SparseLookup* lookup) {
  if (tables_.empty() && keyed_.empty()) return absl::OkStatus();
  if (lookup == nullptr || lookup->unique_ids.size() != variables_.size()) {
    const int first = tables_.empty() ? keyed_[0].variable : tables_[0].variable;
    return absl::InvalidArgumentError(absl::StrCat("the model has embedding table ", variables_[first].name,
                                                   ": each step must name the rows it touches (a SparseLookup with "
                                                   "one id list per variable)"));
  }
  for (Table& t : tables_) RETURN_IF_ERROR(t.layout.Group(lookup->unique_ids[t.variable], &t.positions));
  // Dynamic tables: any int64 is a key; its shard is the one the ps checks (DynamicKeyOwner).
  for (KeyedTable& t : keyed_) {
    const int shards = static_cast<int>(t.positions.size());
    for (auto& p : t.positions) p.clear();
    const std::vector<int64_t>& ids = lookup->unique_ids[t.variable];
    for (size_t k = 0; k < ids.size(); ++k) {
      t.positions[DynamicKeyOwner(static_cast<uint64_t>(ids[k]), shards)].push_back(static_cast<int64_t>(k));
    }
  }
  return absl::OkStatus();
}

absl::Status VariableExchange::PullAll(int64_t min_version, std::vector<Tensor>* params, const SparseLookup* lookup) {
  if (!keyed_.empty() && min_version > 0) {
    return AsyncOnly(keyed_[0].name, absl::StrCat("a pull waiting for version ", min_version));
  }
  RETURN_IF_ERROR(GroupIds(lookup));
  if (params->size() != variables_.size()) {
    params->clear();
    for (const VariableSpec& v : variables_)
      params->emplace_back(DType::kFloat32, v.sparse ? std::vector<int64_t>{0, 0} : v.shape);
  }
  auto shape_rows = [&](int variable, int64_t dim) {
    const std::vector<int64_t> shape = {static_cast<int64_t>(lookup->unique_ids[variable].size()), dim};
    Tensor& rows = (*params)[variable];
    if (rows.shape() != shape) rows = Tensor(DType::kFloat32, shape);
  };
  for (const Table& t : tables_) shape_rows(t.variable, t.layout.dim());
  for (const KeyedTable& t : keyed_) shape_rows(t.variable, t.dim);
  return ForEachPs([&](int p) { return PullFrom(p, min_version, params, lookup); },
                   keyed_.empty() ? nullptr : std::function<absl::Status(int)>([&](int p) {
                     return PullKeysFrom(p, *lookup, params);
                   }));
}

absl::Status VariableExchange::PullKeysFrom(int p, const SparseLookup& lookup, std::vector<Tensor>* params) {
  PullKeysRequest& request = pull_keys_requests_[p];
  const auto& slots = keyed_slots_[p];
  size_t keys = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    const KeyedSlot& slot = slots[i];
    const std::vector<int64_t>& positions = keyed_[slot.table].positions[slot.shard];
    SetKeys(lookup.unique_ids[slot.variable], positions, request.mutable_tables(static_cast<int>(i)));
    keys += positions.size();
  }
  if (keys == 0) return absl::OkStatus();  // none of this step's keys live here
  PullKeysResponse& response = pull_keys_responses_[p];
  response.Clear();
  RETURN_IF_ERROR(ps_[p]->PullKeys(request, &response));
  if (response.tables_size() != static_cast<int>(slots.size())) {
    return absl::InvalidArgumentError(absl::StrCat(ps_[p]->peer(), " answered a pull of ", slots.size(),
                                                   " dynamic table shards with ", response.tables_size(), " entries"));
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    const KeyedSlot& slot = slots[i];
    const KeyedRows& rows = response.tables(static_cast<int>(i));
    RETURN_IF_ERROR(ScatterPulledRows(ps_[p]->peer(), slot.name, rows.shard_name(), rows.values(),
                                      keyed_[slot.table].positions[slot.shard], keyed_[slot.table].dim,
                                      &(*params)[slot.variable]));
  }
  return absl::OkStatus();
}

absl::Status VariableExchange::PullFrom(int p, int64_t min_version, std::vector<Tensor>* params,
                                        const SparseLookup* lookup) {
  PullRequest& request = pull_requests_[p];
  request.set_min_version(std::max<int64_t>(min_version, 0));
  for (size_t i = 0; i < table_slots_[p].size(); ++i) {
    const TableSlot& slot = table_slots_[p][i];
    const std::vector<int64_t>& positions = tables_[slot.table].positions[slot.shard];
    const std::vector<int64_t>& ids = lookup->unique_ids[slot.variable];
    SparseRows* rows = request.mutable_sparse(static_cast<int>(i));
    rows->set_num_ids(static_cast<int64_t>(positions.size()));
    GatherIdBytes(ids, positions, rows->mutable_ids());
  }
  PullResponse response;
  RETURN_IF_ERROR(ps_[p]->Pull(request, &response));
  const auto& slots = slots_[p];
  if (response.values_size() != static_cast<int>(slots.size())) {
    return absl::InvalidArgumentError(absl::StrCat(ps_[p]->peer(), " answered a pull of ", slots.size(),
                                                   " shards with ", response.values_size(), " values"));
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    const ShardValue& value = response.values(static_cast<int>(i));
    const ShardSlot& slot = slots[i];
    const int64_t floats = slot.rows * row_floats_[slot.variable];
    if (value.name() != slot.name || value.value().dtype() != DT_FLOAT ||
        value.value().data().size() != static_cast<size_t>(floats) * sizeof(float)) {
      return absl::InvalidArgumentError(absl::StrCat(ps_[p]->peer(), " sent ", value.name(), " with ",
                                                     value.value().data().size(), " bytes; expected float32 shard ",
                                                     slot.name, " of ", floats * sizeof(float), " bytes"));
    }
    float* dst = (*params)[slot.variable].data<float>() + slot.row_offset * row_floats_[slot.variable];
    std::memcpy(dst, value.value().data().data(), floats * sizeof(float));
    pulled_[p][i] = value.version();
  }
  if (table_slots_[p].empty()) return absl::OkStatus();
  return ScatterRows(p, response, *lookup, params);
}

absl::Status VariableExchange::ScatterRows(int p, const PullResponse& response, const SparseLookup& lookup,
                                           std::vector<Tensor>* params) {
  const auto& slots = table_slots_[p];
  if (response.sparse_size() != static_cast<int>(slots.size())) {
    return absl::InvalidArgumentError(absl::StrCat(ps_[p]->peer(), " answered a pull of ", slots.size(),
                                                   " table shards with ", response.sparse_size(), " entries"));
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    const TableSlot& slot = slots[i];
    const SparseRows& rows = response.sparse(static_cast<int>(i));
    RETURN_IF_ERROR(ScatterPulledRows(ps_[p]->peer(), slot.name, rows.shard_name(), rows.values(),
                                      tables_[slot.table].positions[slot.shard], tables_[slot.table].layout.dim(),
                                      &(*params)[slot.variable]));
    pulled_[p][slots_[p].size() + i] = rows.version();
  }
  return absl::OkStatus();
}

std::pair<int64_t, int64_t> VariableExchange::PulledVersionRange() const {
  int64_t lowest = std::numeric_limits<int64_t>::max(), highest = std::numeric_limits<int64_t>::min();
  for (const std::vector<int64_t>& versions : pulled_) {
    for (int64_t v : versions) {
      lowest = std::min(lowest, v);
      highest = std::max(highest, v);
    }
  }
  if (lowest > highest) return {0, 0};  // no shard at all
  return {lowest, highest};
}

absl::StatusOr<int64_t> VariableExchange::PushAll(int worker_index, bool tag_with_pulled_version,
                                                  const std::vector<Tensor>& grads, const SparseLookup* lookup,
                                                  int64_t sync_step) {
  if (grads.size() != variables_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(grads.size(), " gradients for a model of ", variables_.size(), " variables"));
  }
  if (!keyed_.empty() && (tag_with_pulled_version || sync_step >= 0)) {
    return AsyncOnly(keyed_[0].name, sync_step >= 0 ? absl::StrCat("a push for sync step ", sync_step)
                                                    : std::string("a push tagged with the pulled version"));
  }
  RETURN_IF_ERROR(GroupIds(lookup));
  auto check_rows = [&](int variable, const std::string& name, int64_t dim) {
    const std::vector<int64_t> shape = {static_cast<int64_t>(lookup->unique_ids[variable].size()), dim};
    if (grads[variable].shape() == shape) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("the gradient of table ", name, " has shape ",
                                                   ShapeString(grads[variable].shape()), "; its ", shape[0],
                                                   " unique ids need ", ShapeString(shape)));
  };
  for (const Table& t : tables_) RETURN_IF_ERROR(check_rows(t.variable, t.layout.name(), t.layout.dim()));
  for (const KeyedTable& t : keyed_) RETURN_IF_ERROR(check_rows(t.variable, t.name, t.dim));
  // The dynamic rows' step: the job's update count as last pulled (see the header).
  const int64_t step = std::max<int64_t>(PulledVersionRange().second, 0);
  std::vector<int64_t> staleness(ps_.size(), 0);
  RETURN_IF_ERROR(ForEachPs(
      [&](int p) { return PushTo(p, worker_index, tag_with_pulled_version, grads, lookup, sync_step, &staleness[p]); },
      keyed_.empty() ? nullptr : std::function<absl::Status(int)>([&](int p) {
        return PushKeysTo(p, worker_index, step, grads, *lookup);
      })));
  return *std::max_element(staleness.begin(), staleness.end());
}

absl::Status VariableExchange::PushKeysTo(int p, int worker_index, int64_t step, const std::vector<Tensor>& grads,
                                          const SparseLookup& lookup) {
  // Sent also when none of the step's keys live here: the push's step expires this ps's rows
  // (ttl_steps) with the job's progress, and every shard counts one acknowledged push per step.
  PushKeysRequest& request = push_keys_requests_[p];
  request.set_worker_index(worker_index);
  request.set_step(step);
  const auto& slots = keyed_slots_[p];
  for (size_t i = 0; i < slots.size(); ++i) {
    const KeyedSlot& slot = slots[i];
    const std::vector<int64_t>& positions = keyed_[slot.table].positions[slot.shard];
    KeyedRows* rows = request.mutable_tables(static_cast<int>(i));
    SetKeys(lookup.unique_ids[slot.variable], positions, rows);
    GatherRowBytes(grads[slot.variable], positions, keyed_[slot.table].dim, rows->mutable_values());
  }
  PushKeysResponse response;
  RETURN_IF_ERROR(ps_[p]->PushKeys(request, &response));
  ++keyed_acked_[p];  // only this ps's keyed task writes its entry
  return absl::OkStatus();
}

absl::Status VariableExchange::PushTo(int p, int worker_index, bool tag, const std::vector<Tensor>& grads,
                                      const SparseLookup* lookup, int64_t sync_step, int64_t* staleness) {
  PushRequest& request = push_requests_[p];
  request.set_worker_index(worker_index);
  const auto& slots = slots_[p];
  const int64_t pulled = pulled_[p].empty() ? 0 : *std::min_element(pulled_[p].begin(), pulled_[p].end());
  if (sync_step >= 0 && pulled > sync_step) return absl::OkStatus();  // applied there already
  if (tag) request.set_step(sync_step >= 0 ? sync_step : pulled);
  for (size_t i = 0; i < slots.size(); ++i) {
    const ShardSlot& slot = slots[i];
    const VariableSpec& var = variables_[slot.variable];
    TensorProto* t = request.mutable_gradients(static_cast<int>(i))->mutable_gradient();
    t->clear_shape();
    if (!var.shape.empty()) {
      t->add_shape(slot.rows);
      for (size_t d = 1; d < var.shape.size(); ++d) t->add_shape(var.shape[d]);
    }
    const int64_t floats = slot.rows * row_floats_[slot.variable];
    const float* src = grads[slot.variable].data<float>() + slot.row_offset * row_floats_[slot.variable];
    t->set_data(src, floats * sizeof(float));
  }
  if (!table_slots_[p].empty()) FillRows(p, grads, *lookup);
  PushResponse response;
  absl::Status pushed = ps_[p]->Push(request, &response);
  if (sync_step >= 0 && IsAlreadyCountedSyncPush(pushed)) return absl::OkStatus();
  RETURN_IF_ERROR(pushed);
  ++acked_[p];  // only this ps's thread writes its entry
  for (int i = 0; i < response.versions_size() && i < static_cast<int>(pulled_[p].size()); ++i) {
    *staleness = std::max(*staleness, response.versions(i) - 1 - pulled_[p][i]);
  }
  return absl::OkStatus();
}

void VariableExchange::FillRows(int p, const std::vector<Tensor>& grads, const SparseLookup& lookup) {
  PushRequest& request = push_requests_[p];
  for (size_t i = 0; i < table_slots_[p].size(); ++i) {
    const TableSlot& slot = table_slots_[p][i];
    const std::vector<int64_t>& positions = tables_[slot.table].positions[slot.shard];
    SparseRows* rows = request.mutable_sparse(static_cast<int>(i));
    rows->set_num_ids(static_cast<int64_t>(positions.size()));
    GatherIdBytes(lookup.unique_ids[slot.variable], positions, rows->mutable_ids());
    GatherRowBytes(grads[slot.variable], positions, tables_[slot.table].layout.dim(), rows->mutable_values());
  }
}

void VariableExchange::TakeAcknowledgedPushes(std::map<std::string, int64_t>* out) {
  for (size_t p = 0; p < ps_.size(); ++p) {
    if (acked_[p] == 0) continue;
    for (const ShardSlot& slot : slots_[p]) (*out)[slot.name] += acked_[p];
    for (const TableSlot& slot : table_slots_[p]) (*out)[slot.name] += acked_[p];
    acked_[p] = 0;
  }
  for (size_t p = 0; p < ps_.size(); ++p) {
    if (keyed_acked_[p] == 0) continue;
    for (const KeyedSlot& slot : keyed_slots_[p]) (*out)[slot.name] += keyed_acked_[p];
    keyed_acked_[p] = 0;
  }
}

}  // namespace pstrain
