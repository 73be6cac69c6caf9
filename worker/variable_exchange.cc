#include "worker/variable_exchange.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tensor_proto.h"

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
    return PlanMismatch(absl::StrCat("the model has ", variables.size(), " variables, the plan ",
                                     plan.variables_size()));
  }
  std::unique_ptr<VariableExchange> ex(new VariableExchange(std::move(ps)));
  ex->variables_ = variables;
  ex->slots_.resize(ex->ps_.size());
  for (int v = 0; v < plan.variables_size(); ++v) {
    const auto& pv = plan.variables(v);
    const VariableSpec& spec = variables[v];
    const std::vector<int64_t> shape(pv.shape().begin(), pv.shape().end());
    if (pv.name() != spec.name || shape != spec.shape || pv.dtype() != DT_FLOAT) {
      return PlanMismatch(absl::StrCat("plan variable ", v, " is ", pv.name(), " ", ShapeString(shape),
                                       ", the model's is ", spec.name, " float32 ", ShapeString(spec.shape)));
    }
    const int64_t rows = spec.shape.empty() ? 1 : spec.shape[0];
    ex->row_floats_.push_back(spec.shape.empty() ? 1 : NumElements(spec.shape) / std::max<int64_t>(rows, 1));
    int64_t next_row = 0;
    for (const ShardSpecProto& s : pv.shards()) {
      if (s.row_offset() != next_row || s.rows() <= 0 || s.row_offset() + s.rows() > rows) {
        return PlanMismatch(absl::StrCat("shard ", s.shard_name(), " covers rows [", s.row_offset(), ", ",
                                         s.row_offset() + s.rows(), ") of ", spec.name, ", expected to start at ",
                                         next_row, " within ", rows, " rows"));
      }
      if (s.ps_task() < 0 || s.ps_task() >= ex->num_ps()) {
        return absl::InvalidArgumentError(absl::StrCat("shard ", s.shard_name(), " lives on ps task ", s.ps_task(),
                                                       " but only ", ex->num_ps(), " ps addresses were given"));
      }
      ex->slots_[s.ps_task()].push_back({s.shard_name(), v, s.row_offset(), s.rows()});
      next_row += s.rows();
    }
    if (next_row != rows) return PlanMismatch(absl::StrCat("the shards of ", spec.name, " cover ", next_row, " of ", rows, " rows"));
  }
  ex->pulled_.resize(ex->ps_.size());
  ex->pull_requests_.resize(ex->ps_.size());
  ex->push_requests_.resize(ex->ps_.size());
  for (size_t p = 0; p < ex->ps_.size(); ++p) {
    ex->pulled_[p].assign(ex->slots_[p].size(), 0);
    for (const ShardSlot& slot : ex->slots_[p]) {
      ex->pull_requests_[p].add_shard_names(slot.name);
      auto* g = ex->push_requests_[p].add_gradients();
      g->set_name(slot.name);
      g->mutable_gradient()->set_dtype(DT_FLOAT);
    }
  }
  return ex;
}

absl::Status VariableExchange::ForEachPs(const std::function<absl::Status(int)>& fn) {
  std::vector<absl::Status> results(ps_.size());
  pool_.Run(num_ps(), [&](int p) { results[p] = slots_[p].empty() ? absl::OkStatus() : fn(p); });
  for (const absl::Status& s : results) RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

absl::Status VariableExchange::PullAll(int64_t min_version, std::vector<Tensor>* params,
                                       const SparseLookup* lookup) {
  for (const VariableSpec& v : variables_) {
    if (v.sparse) return absl::UnimplementedError(absl::StrCat("table ", v.name, ": sparse pulls are not built yet"));
  }
  if (params->size() != variables_.size()) {
    params->clear();
    for (const VariableSpec& v : variables_) params->emplace_back(DType::kFloat32, v.shape);
  }
  return ForEachPs([&](int p) { return PullFrom(p, min_version, params); });
}

absl::Status VariableExchange::PullFrom(int p, int64_t min_version, std::vector<Tensor>* params) {
  PullRequest& request = pull_requests_[p];
  request.set_min_version(std::max<int64_t>(min_version, 0));
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
  return absl::OkStatus();
}

absl::StatusOr<int64_t> VariableExchange::PushAll(int worker_index, bool tag_with_pulled_version,
                                                  const std::vector<Tensor>& grads, const SparseLookup* lookup) {
  for (const VariableSpec& v : variables_) {
    if (v.sparse) return absl::UnimplementedError(absl::StrCat("table ", v.name, ": sparse pushes are not built yet"));
  }
  std::vector<int64_t> staleness(ps_.size(), 0);
  RETURN_IF_ERROR(ForEachPs([&](int p) { return PushTo(p, worker_index, tag_with_pulled_version, grads, &staleness[p]); }));
  return *std::max_element(staleness.begin(), staleness.end());
}

absl::Status VariableExchange::PushTo(int p, int worker_index, bool tag, const std::vector<Tensor>& grads,
                                      int64_t* staleness) {
  PushRequest& request = push_requests_[p];
  request.set_worker_index(worker_index);
  const auto& slots = slots_[p];
  if (tag) request.set_step(*std::min_element(pulled_[p].begin(), pulled_[p].end()));
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
  PushResponse response;
  RETURN_IF_ERROR(ps_[p]->Push(request, &response));
  for (int i = 0; i < response.versions_size() && i < static_cast<int>(slots.size()); ++i) {
    *staleness = std::max(*staleness, response.versions(i) - 1 - pulled_[p][i]);
  }
  return absl::OkStatus();
}

}  // namespace pstrain
