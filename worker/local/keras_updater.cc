#include "worker/local/keras_updater.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/plan/dynamic_shards.h"
#include "common/plan/variable_planner.h"
#include "common/platform/status_macros.h"
#include "ps/store/dynamic_table.h"
#include "ps/store/dynamic_table_state.h"
#include "ps/store/initializers.h"
#include "ps/store/optimizer.h"
#include "ps/store/sparse_apply.h"

namespace pstrain {
namespace {

// The options of the only shard of dynamic table `var` (as DynamicShardSpecFromPlan and the ps
// make them for shard 0 of 1).
DynamicTableOptions OneShardOptions(const VariableSpec& var, uint64_t seed, std::shared_ptr<const Optimizer> opt) {
  DynamicTableOptions o;
  o.name = var.name;
  o.dim = var.shape.size() == 2 ? var.shape[1] : 0;
  o.seed = seed;
  o.initializer = InitializerToProto(var.initializer);
  o.optimizer = std::move(opt);
  // Beyond int: still too large, so Create refuses it rather than a wrapped value passing.
  o.admission_threshold =
      static_cast<int>(std::min<int64_t>(var.dynamic->admission_threshold, std::numeric_limits<int>::max()));
  o.ttl_steps = var.dynamic->ttl_steps;
  o.max_rows = DynamicShardCap(var.dynamic->max_rows, 1);
  return o;
}

class KerasUpdater : public ParameterUpdater {
 public:
  KerasUpdater(std::shared_ptr<const Optimizer> optimizer, const std::vector<VariableSpec>& variables,
               std::vector<std::unique_ptr<DynamicTable>> dynamic)
      : optimizer_(std::move(optimizer)), variables_(variables), dynamic_(std::move(dynamic)) {
    const int slots = static_cast<int>(optimizer_->SlotNames().size());
    slots_.resize(variables.size());
    for (size_t v = 0; v < variables.size(); ++v) {
      // Additive updates (non-trainable) have no slots; a dynamic table keeps its slots by its rows.
      if (!variables[v].trainable || variables[v].dynamic.has_value()) continue;
      for (int s = 0; s < slots; ++s) {
        slots_[v].emplace_back(NumElements(variables[v].shape), optimizer_->SlotInitialValue(s));
      }
    }
  }

  absl::Status Apply(const std::vector<Tensor>& grads, std::vector<Tensor>* params) override {
    if (grads.size() != slots_.size() || params->size() != slots_.size()) {
      return absl::InvalidArgumentError("gradient count does not match the variables");
    }
    for (size_t v = 0; v < slots_.size(); ++v) {
      if (variables_[v].sparse) continue;  // tables are updated by ApplySparse
      const Optimizer& update = variables_[v].trainable ? *optimizer_ : *additive_;
      update.Apply(grads[v].flat(), (*params)[v].flat(), SlotSpans(v), step_);
    }
    ++step_;
    return absl::OkStatus();
  }

  absl::Status LookupDynamic(int variable, absl::Span<const int64_t> keys, Tensor* rows) const override {
    ASSIGN_OR_RETURN(const DynamicTable* table, Dynamic(variable));
    const std::vector<int64_t> shape = {static_cast<int64_t>(keys.size()), table->dim()};
    if (rows->shape() != shape) *rows = Tensor(DType::kFloat32, shape);
    return table->Lookup(keys, rows->flat());
  }

  absl::Status PushDynamic(int variable, absl::Span<const int64_t> keys, const Tensor& grad_rows,
                           int64_t step) override {
    ASSIGN_OR_RETURN(const DynamicTable* found, Dynamic(variable));
    DynamicTable* table = dynamic_[variable].get();
    const std::vector<int64_t> shape = {static_cast<int64_t>(keys.size()), found->dim()};
    if (grad_rows.shape() != shape) {
      return absl::InvalidArgumentError(absl::StrCat("dynamic table ", variables_[variable].name, ": gradient rows ",
                                                     ShapeString(grad_rows.shape()), " for ", keys.size(),
                                                     " keys; want ", ShapeString(shape)));
    }
    RETURN_IF_ERROR(table->Push(keys, grad_rows.flat(), step));
    table->EvictExpired(step);  // as the ps does after each push
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> SaveDynamic(int variable, int64_t* rows) const override {
    ASSIGN_OR_RETURN(const DynamicTable* table, Dynamic(variable));
    const DynamicTableState state = table->ExportState();
    if (rows != nullptr) *rows = static_cast<int64_t>(state.keys.size());
    return EncodeDynamicTableState(state);
  }

  absl::Status RestoreDynamic(int variable, const std::string& bytes) override {
    RETURN_IF_ERROR(Dynamic(variable).status());
    ASSIGN_OR_RETURN(DynamicTableState state, DecodeDynamicTableState(bytes));
    return dynamic_[variable]->RestoreState(state);
  }

  absl::StatusOr<int64_t> DynamicRows(int variable) const override {
    ASSIGN_OR_RETURN(const DynamicTable* table, Dynamic(variable));
    return table->rows();
  }

  absl::Status ApplySparse(int variable, absl::Span<const int64_t> ids, const Tensor& grad_rows,
                           Tensor* table) override {
    RETURN_IF_ERROR(CheckSparse(variable, ids, grad_rows, *table));
    const int64_t dim = variables_[variable].shape[1];
    RowAccumulator sum(dim, ids.size());
    const char* rows = reinterpret_cast<const char*>(grad_rows.raw());
    for (size_t i = 0; i < ids.size(); ++i) sum.Add(ids[i], rows + i * dim * sizeof(float));
    // The ps's implementation: the table is one shard holding every row (local row = global id).
    ApplyRowGradients(*optimizer_, sum.Take(), dim, table->flat(), SlotSpans(variable), step_);
    return absl::OkStatus();
  }

 private:
  std::vector<absl::Span<float>> SlotSpans(size_t v) {
    std::vector<absl::Span<float>> spans;
    for (std::vector<float>& s : slots_[v]) spans.emplace_back(s);
    return spans;
  }

  absl::StatusOr<const DynamicTable*> Dynamic(int variable) const {
    if (variable < 0 || variable >= static_cast<int>(dynamic_.size()) || dynamic_[variable] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("variable ", variable, " is not a dynamic table"));
    }
    return dynamic_[variable].get();
  }

  absl::Status CheckSparse(int variable, absl::Span<const int64_t> ids, const Tensor& grad_rows,
                           const Tensor& table) const {
    if (variable < 0 || variable >= static_cast<int>(variables_.size()) || !variables_[variable].sparse ||
        variables_[variable].dynamic.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("variable ", variable, " is not an embedding table of rows"));
    }
    const VariableSpec& var = variables_[variable];
    const std::vector<int64_t> rows_shape = {static_cast<int64_t>(ids.size()), var.shape[1]};
    if (table.shape() != var.shape || grad_rows.shape() != rows_shape) {
      return absl::InvalidArgumentError(absl::StrCat("table ", var.name, " ", ShapeString(var.shape), ": got table ",
                                                     ShapeString(table.shape()), " and gradient rows ",
                                                     ShapeString(grad_rows.shape()), " for ", ids.size(), " ids"));
    }
    for (int64_t id : ids) {
      if (id < 0 || id >= var.shape[0]) {
        return absl::InvalidArgumentError(
            absl::StrCat("table ", var.name, " has rows 0..", var.shape[0] - 1, "; row id ", id, " is outside it"));
      }
    }
    return absl::OkStatus();
  }

  std::shared_ptr<const Optimizer> optimizer_;
  const std::shared_ptr<const Optimizer> additive_ = Optimizer::Additive();  // non-trainable variables
  std::vector<VariableSpec> variables_;
  std::vector<std::unique_ptr<DynamicTable>> dynamic_;  // per variable: its table, or null
  std::vector<std::vector<std::vector<float>>> slots_;  // [variable][slot][element]
  int64_t step_ = 0;
};

}  // namespace

absl::Status InitializeVariable(const VariableSpec& var, uint64_t seed, Tensor* value) {
  ShardSpecProto spec;
  spec.set_shard_name(var.name);
  spec.set_variable_name(var.name);
  for (int64_t d : var.shape) spec.add_full_shape(d);
  spec.set_row_offset(0);
  spec.set_rows(var.shape.empty() ? 1 : var.shape[0]);
  spec.set_dtype(DT_FLOAT);
  *spec.mutable_initializer() = InitializerToProto(var.initializer);
  spec.set_seed(seed);
  return InitializeRows(spec, value);
}

absl::StatusOr<std::unique_ptr<ParameterUpdater>> NewKerasUpdater(const OptimizerSpec& optimizer,
                                                                  const std::vector<VariableSpec>& variables,
                                                                  uint64_t seed) {
  ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> made, Optimizer::Create(OptimizerProtoFromSpec(optimizer)));
  std::shared_ptr<const Optimizer> opt = std::move(made);
  std::vector<std::unique_ptr<DynamicTable>> dynamic(variables.size());
  for (size_t v = 0; v < variables.size(); ++v) {
    if (!variables[v].dynamic.has_value()) continue;
    auto table = DynamicTable::Create(OneShardOptions(variables[v], seed, opt));
    if (!table.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dynamic table ", variables[v].name, ": ", table.status().message()));
    }
    dynamic[v] = std::move(*table);
  }
  return std::unique_ptr<ParameterUpdater>(new KerasUpdater(std::move(opt), variables, std::move(dynamic)));
}

}  // namespace pstrain
