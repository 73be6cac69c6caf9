// CtrModel: a CTR model (embedding rows of each field concatenated with the numeric features, a
// dense tower, one logit, binary cross-entropy from logits) running forward and backward on ONE
// thread over a slice of a batch, with its buffers kept across steps. Parameters are passed per
// call in ModelVariables() order: the fields' tables as their gathered unique rows [U_f, dim]
// (the batch's positions index them), then the tower's kernels and biases. A bag field's
// embedding is its ids' rows combined (CombineBags, embedding_kernels.h).
// CtrGradientComputer (ctr_gradient_computer.h) runs one CtrModel per thread and turns the
// tower-input gradient into the tables' gradient rows.
// Thread-safety: one call at a time per object.
#ifndef PSTRAIN_WORKER_CPU_CTR_MODEL_H_
#define PSTRAIN_WORKER_CPU_CTR_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "common/plan/model_variables.h"
#include "worker/cpu/dense.h"
#include "worker/cpu/embedding_kernels.h"
#include "worker/step/gradient_computer.h"

namespace pstrain {

class CtrModel {
 public:
  // InvalidArgument when `spec` is not a CTR model whose layers are all dense.
  static absl::StatusOr<std::unique_ptr<CtrModel>> Create(const ModelSpec& spec);

  const std::vector<VariableSpec>& variables() const { return variables_; }
  const EmbeddingLayout& layout() const { return layout_; }
  int num_fields() const { return static_cast<int>(layout_.dims.size()); }
  // Per field: "" (one id per example) or its bag combiner (EmbeddingFieldSpec::combiner).
  const std::vector<std::string>& combiners() const { return combiners_; }

  // Forward + backward over `batch` examples: numeric [batch, num_numeric], positions
  // [batch, fields], labels [batch]; `bags` (nullptr when no field is a bag) per field: a bag
  // field's entries for these examples (offsets from this call's first example), whose
  // positions column is not read. Writes the tower's gradients grads[num_fields()..] (not
  // accumulated; grads[0..num_fields) are not touched) and the gradient of the tower's input
  // into `din` [batch, layout().width]. Adds loss, accuracy, logits and labels to `metrics`.
  // REQUIRES: shapes and positions validated by the caller.
  void Compute(const float* const* params, const float* numeric, const int32_t* positions, const BagView* bags,
               const float* labels, int64_t batch, float loss_scale, float* const* grads, float* din,
               BatchMetrics* metrics);

  // Forward only: loss, accuracy, logits and labels into `metrics`.
  void Evaluate(const float* const* params, const float* numeric, const int32_t* positions, const BagView* bags,
                const float* labels, int64_t batch, BatchMetrics* metrics);
  // The tower input [batch, layout().width] of the last Compute / Evaluate.
  const float* tower_input() const { return activations_[0].data(); }

 private:
  CtrModel() = default;
  // Returns the logits [batch].
  const float* Forward(const float* const* params, const float* numeric, const int32_t* positions,
                       const BagView* bags, int64_t batch);
  void AddMetrics(const float* logits, const float* labels, int64_t batch, float loss_scale, bool want_grad,
                  BatchMetrics* metrics);

  std::vector<VariableSpec> variables_;
  EmbeddingLayout layout_;
  std::vector<Dense> tower_;
  std::vector<int> first_param_;                 // per tower layer: its kernel's variable index
  std::vector<std::vector<float>> activations_;  // [0]: tower input; [l + 1]: layer l's output
  std::vector<float> grad_a_, grad_b_;           // ping-pong activation gradients
  std::vector<const float*> table_rows_;         // per field: params[f] (nullptr for a bag field)
  std::vector<std::string> combiners_;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_CTR_MODEL_H_
