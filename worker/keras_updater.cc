#include "worker/keras_updater.h"

#include "common/status_macros.h"
#include "common/variable_planner.h"
#include "ps/initializers.h"
#include "ps/optimizer.h"

namespace pstrain {
namespace {

class KerasUpdater : public ParameterUpdater {
 public:
  KerasUpdater(std::unique_ptr<Optimizer> optimizer, const std::vector<VariableSpec>& variables)
      : optimizer_(std::move(optimizer)) {
    const int slots = static_cast<int>(optimizer_->SlotNames().size());
    slots_.resize(variables.size());
    for (size_t v = 0; v < variables.size(); ++v) {
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
      std::vector<absl::Span<float>> slot_spans;
      for (std::vector<float>& s : slots_[v]) slot_spans.emplace_back(s);
      optimizer_->Apply(grads[v].flat(), (*params)[v].flat(), slot_spans, step_);
    }
    ++step_;
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<Optimizer> optimizer_;
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
                                                                  const std::vector<VariableSpec>& variables) {
  ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> opt, Optimizer::Create(OptimizerProtoFromSpec(optimizer)));
  return std::unique_ptr<ParameterUpdater>(new KerasUpdater(std::move(opt), variables));
}

}  // namespace pstrain
