#include "worker/exchange/variable_exchange.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor_proto.h"
#include "common/wire/ps_trouble.h"
#include "common/wire/sync_push_status.h"

namespace pstrain {
namespace {

absl::Status PlanMismatch(const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("the variable plan does not fit the job's model: ", why));
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
  for (int v = 0; v < plan.variables_size(); ++v) {
    const auto& pv = plan.variables(v);
    const VariableSpec& spec = variables[v];
    const std::vector<int64_t> shape(pv.shape().begin(), pv.shape().end());
    if (pv.name() != spec.name || shape != spec.shape || pv.dtype() != DT_FLOAT || pv.sparse() != spec.sparse) {
      return PlanMismatch(absl::StrCat("plan variable ", v, " is ", pv.sparse() ? "table " : "", pv.name(), " ",
                                       ShapeString(shape), ", the model's is ", spec.sparse ? "table " : "", spec.name,
                                       " float32 ", ShapeString(spec.shape)));
    }
    const int64_t rows = spec.shape.empty() ? 1 : spec.shape[0];
    ex->row_floats_.push_back(spec.shape.empty() ? 1 : NumElements(spec.shape) / std::max<int64_t>(rows, 1));
    for (const ShardSpecProto& s : pv.shards()) {
      if (s.ps_task() < 0 || s.ps_task() >= ex->num_ps()) {
        return absl::InvalidArgumentError(absl::StrCat("shard ", s.shard_name(), " lives on ps task ", s.ps_task(),
                                                       " but only ", ex->num_ps(), " ps addresses were given"));
      }
    }
    RETURN_IF_ERROR(spec.sparse ? ex->AddTable(v, pv) : ex->AddDense(v, pv));
  }
  ex->pulled_.resize(ex->ps_.size());
  ex->pull_requests_.resize(ex->ps_.size());
  ex->push_requests_.resize(ex->ps_.size());
  ex->acked_.assign(ex->ps_.size(), 0);
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

absl::Status VariableExchange::ForEachPs(const std::function<absl::Status(int)>& fn) {
  std::vector<absl::Status> results(ps_.size());
  pool_.Run(num_ps(),
            [&](int p) { results[p] = slots_[p].empty() && table_slots_[p].empty() ? absl::OkStatus() : fn(p); });
  for (size_t p = 0; p < results.size(); ++p) {
    // A ps that is gone, silent or restarted without its shards: the chief re-queues the closure
    // and checks that ps (common/wire/ps_trouble.h); this worker stays configured.
    if (IsPsTrouble(results[p])) return PsTroubleStatus(static_cast<int>(p), results[p]);
  }
  for (const absl::Status& s : results) RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

absl::Status VariableExchange::GroupIds(const SparseLookup* lookup) {
  if (tables_.empty()) return absl::OkStatus();
  if (lookup == nullptr || lookup->unique_ids.size() != variables_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the model has embedding table ",
                                                   variables_[tables_[0].variable].name,
                                                   ": each step must name the rows it touches (a SparseLookup with "
                                                   "one id list per variable)"));
  }
  for (Table& t : tables_) RETURN_IF_ERROR(t.layout.Group(lookup->unique_ids[t.variable], &t.positions));
  return absl::OkStatus();
}

absl::Status VariableExchange::PullAll(int64_t min_version, std::vector<Tensor>* params, const SparseLookup* lookup) {
  RETURN_IF_ERROR(GroupIds(lookup));
  if (params->size() != variables_.size()) {
    params->clear();
    for (const VariableSpec& v : variables_)
      params->emplace_back(DType::kFloat32, v.sparse ? std::vector<int64_t>{0, 0} : v.shape);
  }
  for (const Table& t : tables_) {
    const std::vector<int64_t> shape = {static_cast<int64_t>(lookup->unique_ids[t.variable].size()), t.layout.dim()};
    Tensor& rows = (*params)[t.variable];
    if (rows.shape() != shape) rows = Tensor(DType::kFloat32, shape);
  }
  return ForEachPs([&](int p) { return PullFrom(p, min_version, params, lookup); });
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
    std::string* bytes = rows->mutable_ids();
    bytes->resize(positions.size() * sizeof(int64_t));
    for (size_t k = 0; k < positions.size(); ++k) std::memcpy(&(*bytes)[k * 8], &ids[positions[k]], sizeof(int64_t));
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
    const std::vector<int64_t>& positions = tables_[slot.table].positions[slot.shard];
    const size_t row_bytes = static_cast<size_t>(tables_[slot.table].layout.dim()) * sizeof(float);
    if (rows.shard_name() != slot.name || rows.values().size() != positions.size() * row_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(ps_[p]->peer(), " sent ", rows.values().size(), " bytes of ",
                                                     rows.shard_name(), "; expected ", positions.size(), " rows of ",
                                                     slot.name, " (", positions.size() * row_bytes, " bytes)"));
    }
    char* dst = reinterpret_cast<char*>((*params)[slot.variable].raw());
    for (size_t k = 0; k < positions.size(); ++k) {
      std::memcpy(dst + positions[k] * row_bytes, rows.values().data() + k * row_bytes, row_bytes);
    }
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
  RETURN_IF_ERROR(GroupIds(lookup));
  for (const Table& t : tables_) {
    const std::vector<int64_t> shape = {static_cast<int64_t>(lookup->unique_ids[t.variable].size()), t.layout.dim()};
    if (grads[t.variable].shape() != shape) {
      return absl::InvalidArgumentError(absl::StrCat("the gradient of table ", t.layout.name(), " has shape ",
                                                     ShapeString(grads[t.variable].shape()), "; its ", shape[0],
                                                     " unique ids need ", ShapeString(shape)));
    }
  }
  std::vector<int64_t> staleness(ps_.size(), 0);
  RETURN_IF_ERROR(
      ForEachPs([&](int p) {
        return PushTo(p, worker_index, tag_with_pulled_version, grads, lookup, sync_step, &staleness[p]);
      }));
  return *std::max_element(staleness.begin(), staleness.end());
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
    const std::vector<int64_t>& ids = lookup.unique_ids[slot.variable];
    const size_t row_bytes = static_cast<size_t>(tables_[slot.table].layout.dim()) * sizeof(float);
    SparseRows* rows = request.mutable_sparse(static_cast<int>(i));
    rows->set_num_ids(static_cast<int64_t>(positions.size()));
    std::string* id_bytes = rows->mutable_ids();
    std::string* values = rows->mutable_values();
    id_bytes->resize(positions.size() * sizeof(int64_t));
    values->resize(positions.size() * row_bytes);
    const char* src = reinterpret_cast<const char*>(grads[slot.variable].raw());
    for (size_t k = 0; k < positions.size(); ++k) {
      std::memcpy(&(*id_bytes)[k * 8], &ids[positions[k]], sizeof(int64_t));
      std::memcpy(&(*values)[k * row_bytes], src + positions[k] * row_bytes, row_bytes);
    }
  }
}

void VariableExchange::TakeAcknowledgedPushes(std::map<std::string, int64_t>* out) {
  for (size_t p = 0; p < ps_.size(); ++p) {
    if (acked_[p] == 0) continue;
    for (const ShardSlot& slot : slots_[p]) (*out)[slot.name] += acked_[p];
    for (const TableSlot& slot : table_slots_[p]) (*out)[slot.name] += acked_[p];
    acked_[p] = 0;
  }
}

}  // namespace pstrain
