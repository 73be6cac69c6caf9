#include "common/plan/variable_planner.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "common/plan/dynamic_shards.h"
#include "common/platform/checked_math.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"
#include "common/tensor/tensor_proto.h"

namespace pstrain {

namespace {

// One shard per ps task: shard i on ps i holds the keys with DynamicKeyOwner(key, n) == i, at most
// DynamicShardCap(max_rows, n) of them; its bytes are the values of that many rows.
absl::Status PlanDynamicTable(const VariableSpec& var, VariablePlan* plan, PlannedVariable* planned) {
  if (var.shape.size() != 2 || var.shape[0] < 1 || var.shape[0] != var.dynamic->max_rows || !var.sparse ||
      var.dtype != DType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat("variable \"", var.name, "\" is dynamic but not a sparse float32 "
                                                   "[max_rows, dim] table of max_rows ", var.dynamic->max_rows,
                                                   " (shape ", ShapeString(var.shape), ")"));
  }
  const int n = plan->num_ps;
  const int64_t cap = DynamicShardCap(var.dynamic->max_rows, n);
  ASSIGN_OR_RETURN(const int64_t bytes, CheckedNumBytes({cap, var.shape[1]}, DTypeSize(var.dtype),
                                                        absl::StrCat("a shard of dynamic table ", var.name)));
  for (int i = 0; i < n; ++i) {
    PlannedShard shard;
    shard.name = DynamicShardName(var.name, i, n);
    shard.row_offset = i;
    shard.row_stride = n;
    shard.rows = cap;
    shard.bytes = bytes;
    shard.ps = i;
    int64_t& held = plan->ps_bytes[static_cast<size_t>(i)];
    ASSIGN_OR_RETURN(held, CheckedSizeSum(held, shard.bytes, absl::StrCat("the bytes held by ps ", i)));
    planned->shards.push_back(std::move(shard));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<VariablePlan> PlanVariables(const std::vector<VariableSpec>& variables, const PartitionerSpec& spec,
                                           int num_ps) {
  if (num_ps < 1) {
    return absl::InvalidArgumentError(absl::StrCat("the number of ps tasks must be at least 1, got ", num_ps));
  }
  VariablePlan plan;
  plan.num_ps = num_ps;
  plan.ps_bytes.assign(static_cast<size_t>(num_ps), 0);
  plan.backup_bytes.assign(static_cast<size_t>(num_ps), 0);
  std::set<std::string> names;
  int next_ps = 0;  // one round-robin counter over every shard of every variable
  for (const VariableSpec& var : variables) {
    if (!names.insert(var.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("variable \"", var.name, "\" is declared twice"));
    }
    auto shards = NumShards(spec, var.shape, var.dtype);
    if (!shards.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("variable \"", var.name, "\": ", shards.status().message()));
    }
    PlannedVariable planned{var, {}};
    if (var.dynamic) {
      RETURN_IF_ERROR(PlanDynamicTable(var, &plan, &planned));
      plan.variables.push_back(std::move(planned));
      continue;  // the round-robin counter does not move
    }
    const int64_t rows = var.shape.empty() ? 1 : var.shape[0];
    // NumShards checked that the variable's bytes fit, so every shard's and row's do.
    const int64_t row_bytes = rows == 0 ? 0 : NumElements(var.shape) / rows * DTypeSize(var.dtype, spec.bytes_per_string);
    int64_t offset = 0;
    const std::vector<int64_t> split = DivSplit(rows, *shards);
    const bool mod = var.sparse && spec.strategy == "mod" && split.size() > 1;
    for (size_t i = 0; i < split.size(); ++i) {
      PlannedShard shard;
      shard.name = split.size() == 1 ? var.name : absl::StrCat(var.name, "/part_", i);
      shard.row_offset = mod ? static_cast<int64_t>(i) : offset;
      shard.row_stride = mod ? static_cast<int64_t>(split.size()) : 1;
      shard.rows = split[i];
      shard.bytes = split[i] * row_bytes;
      shard.ps = next_ps;
      next_ps = (next_ps + 1) % num_ps;
      int64_t& held = plan.ps_bytes[static_cast<size_t>(shard.ps)];
      ASSIGN_OR_RETURN(held, CheckedSizeSum(held, shard.bytes, absl::StrCat("the bytes held by ps ", shard.ps)));
      offset += split[i];
      planned.shards.push_back(std::move(shard));
    }
    plan.variables.push_back(std::move(planned));
  }
  return plan;
}

absl::Status AddBackups(int64_t replicas, VariablePlan* plan) {
  if (replicas == 0) return absl::OkStatus();
  if (replicas != 1 || replicas > plan->num_ps - 1) {
    return absl::InvalidArgumentError(absl::StrCat("ps_replicas ", replicas, " is not possible with ", plan->num_ps,
                                                   " ps tasks: at most 1 backup per shard, on another ps than its "
                                                   "primary (ps_replicas <= num_ps - 1)"));
  }
  for (const PlannedVariable& pv : plan->variables) {
    if (pv.variable.dynamic) {
      return absl::InvalidArgumentError(absl::StrCat("ps_replicas ", replicas, " is not possible with dynamic table ",
                                                     pv.variable.name, ": its shards have no backups; set "
                                                     "ps_replicas to 0 or give the table a vocabulary_size"));
    }
  }
  for (PlannedVariable& pv : plan->variables) {
    for (PlannedShard& s : pv.shards) {
      s.backup_ps = (s.ps + 1) % plan->num_ps;
      const auto b = static_cast<size_t>(s.backup_ps);
      const std::string what = absl::StrCat("the bytes held by ps ", s.backup_ps);
      ASSIGN_OR_RETURN(plan->ps_bytes[b], CheckedSizeSum(plan->ps_bytes[b], s.bytes, what));
      ASSIGN_OR_RETURN(plan->backup_bytes[b], CheckedSizeSum(plan->backup_bytes[b], s.bytes, what));
    }
  }
  return absl::OkStatus();
}

InitializerProto InitializerToProto(const InitializerSpec& spec) {
  InitializerProto p;
  p.set_type(spec.type);
  p.set_value(spec.value);
  p.set_mean(spec.mean);
  p.set_stddev(spec.stddev);
  p.set_minval(spec.minval);
  p.set_maxval(spec.maxval);
  return p;
}

VariablePlanProto VariablePlanToProto(const VariablePlan& plan, uint64_t seed) {
  VariablePlanProto out;
  out.set_num_ps(plan.num_ps);
  for (const PlannedVariable& pv : plan.variables) {
    auto* v = out.add_variables();
    v->set_name(pv.variable.name);
    for (int64_t d : pv.variable.shape) v->add_shape(d);
    v->set_dtype(ToProtoDType(pv.variable.dtype));
    v->set_sparse(pv.variable.sparse);
    v->set_non_trainable(!pv.variable.trainable);
    if (pv.variable.dynamic) {
      DynamicTablePlanProto* d = v->mutable_dynamic();
      d->set_admission_threshold(static_cast<int32_t>(pv.variable.dynamic->admission_threshold));
      d->set_ttl_steps(pv.variable.dynamic->ttl_steps);
      d->set_max_rows(pv.variable.dynamic->max_rows);
    }
    for (const PlannedShard& s : pv.shards) {
      auto* sp = v->add_shards();
      sp->set_shard_name(s.name);
      sp->set_variable_name(pv.variable.name);
      for (int64_t d : pv.variable.shape) sp->add_full_shape(d);
      sp->set_row_offset(s.row_offset);
      sp->set_rows(s.rows);
      sp->set_dtype(ToProtoDType(pv.variable.dtype));
      *sp->mutable_initializer() = InitializerToProto(pv.variable.initializer);
      sp->set_seed(seed);
      sp->set_ps_task(s.ps);
      sp->set_row_stride(s.row_stride);
      sp->set_sparse(pv.variable.sparse);
      sp->set_non_trainable(!pv.variable.trainable);
      if (s.backup_ps >= 0) sp->set_backup_ps(s.backup_ps);
    }
  }
  return out;
}

}  // namespace pstrain
