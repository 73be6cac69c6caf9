// CpuModel: a Keras-Sequential-like model (dense, conv2d, max_pool2d, flatten, relu; softmax
// cross-entropy from logits or MSE) running forward and backward on ONE thread over a slice of a
// batch, with every activation and scratch buffer kept and reused across steps. The parameters
// are passed per call (full variables in ModelVariables() order); the model holds none. A
// max_pool2d right after a conv2d runs fused inside the convolution (conv2d.h).
// CpuGradientComputer (cpu_gradient_computer.h) runs one CpuModel per thread.
// Thread-safety: one call at a time per object.
#ifndef PSTRAIN_WORKER_CPU_CPU_MODEL_H_
#define PSTRAIN_WORKER_CPU_CPU_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "common/plan/model_variables.h"
#include "worker/step/gradient_computer.h"

namespace pstrain {

class CpuLayer;  // cpu_model.cc

class CpuModel {
 public:
  // InvalidArgument naming the layer when the spec cannot be built (see LayerOutputShapes).
  static absl::StatusOr<std::unique_ptr<CpuModel>> Create(const ModelSpec& spec);
  ~CpuModel();

  const std::vector<VariableSpec>& variables() const { return variables_; }
  int64_t input_size() const { return input_size_; }    // floats per example
  int64_t output_size() const { return output_size_; }  // logits / predictions per example
  bool classification() const { return classification_; }

  // Forward + backward over `batch` examples starting at `inputs` (labels or targets likewise).
  // params[i] / grads[i] point at variable i's data; grads are written (not accumulated).
  // REQUIRES: shapes and labels were validated by the caller.
  void Compute(const float* const* params, const float* inputs, const int32_t* labels, const float* targets,
               int64_t batch, float loss_scale, float* const* grads, BatchMetrics* metrics);

  // Forward only; adds nothing to gradients.
  void Evaluate(const float* const* params, const float* inputs, const int32_t* labels, const float* targets,
                int64_t batch, BatchMetrics* metrics);

 private:
  CpuModel() = default;
  const float* Forward(const float* const* params, const float* inputs, int64_t batch);
  double Loss(const float* logits, const int32_t* labels, const float* targets, int64_t batch, float loss_scale,
              bool want_grad, int64_t* correct);

  std::vector<VariableSpec> variables_;
  std::vector<std::unique_ptr<CpuLayer>> layers_;
  std::vector<int> first_param_;                  // per layer: index of its first variable
  std::vector<int64_t> out_sizes_;                // per layer: output floats per example
  std::vector<std::vector<float>> activations_;   // per layer output (unused for flatten)
  std::vector<const float*> outputs_;             // per layer: where its output lives this step
  std::vector<float> grad_a_, grad_b_;            // ping-pong buffers for activation gradients
  int64_t input_size_ = 0, output_size_ = 0;
  bool classification_ = true;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_CPU_MODEL_H_
