// DeviceGradientComputer: the GradientComputer that runs a model's forward and backward pass on a
// DeviceBackend (a GPU through CudaBackend; the CPU emulation in tests). Per step it copies the
// parameters to device memory once (layer by layer on a copy stream, so layer i computes while layer
// i+1's weights are in flight), runs forward, loss, backward on the compute stream, and streams each
// layer's gradients back into page-locked host memory as soon as they are ready. Device buffers are
// sized for the largest batch seen and reused: a steady-state step allocates nothing.
//
// Semantics are the CPU reference's: gradients = loss_scale * SUM over the batch of per-example loss
// gradients; metrics.loss_sum = unscaled sum of per-example losses; correct = first argmax == label.
// Matrix products follow row-major Keras layouts (dense kernel [in, out], conv kernel HWIO); a
// convolution is im2col + GEMM; MaxPool2D passes the gradient to the FIRST maximum of its window.
// Thread-safety: one call at a time (the GradientComputer contract); one object per replica thread.
#ifndef PSTRAIN_WORKER_CUDA_DEVICE_GRADIENT_COMPUTER_H_
#define PSTRAIN_WORKER_CUDA_DEVICE_GRADIENT_COMPUTER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "worker/cuda/device_array.h"
#include "worker/cuda/device_backend.h"
#include "worker/cuda/model_plan.h"
#include "worker/step/gradient_computer.h"

namespace pstrain {

class DeviceGradientComputer : public GradientComputer {
 public:
  struct Options {
    bool input_gradient = false;  // also compute d(loss)/d(inputs) (tests read it back)
  };

  // Takes ownership of `backend`. InvalidArgument when the model cannot run (see PlanModel); backend
  // errors (event creation, parameter buffers) as returned by it.
  static absl::StatusOr<std::unique_ptr<DeviceGradientComputer>> Create(const ModelSpec& model,
                                                                        std::unique_ptr<DeviceBackend> backend,
                                                                        Options options);
  ~DeviceGradientComputer() override;

  absl::Status Compute(absl::Span<const Tensor> params, const Batch& batch, float loss_scale,
                       std::vector<Tensor>* grads, BatchMetrics* metrics) override;
  absl::Status Evaluate(absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* metrics) override;

  // Test hooks, valid after a successful Compute/Evaluate of a non-empty batch: the output of
  // layers[layer] for the whole batch (NHWC), and d(scaled loss)/d(inputs) (REQUIRES
  // Options::input_gradient and a Compute). FailedPrecondition otherwise.
  absl::Status ReadActivation(int layer, std::vector<float>* out);
  absl::Status ReadInputGradient(std::vector<float>* out);

  const ModelPlan& plan() const { return plan_; }
  const DeviceBackend& backend() const { return *backend_; }

 private:
  DeviceGradientComputer(ModelPlan plan, std::unique_ptr<DeviceBackend> backend, Options options);

  absl::Status RunCompute(absl::Span<const Tensor> params, const Batch& batch, float loss_scale,
                          std::vector<Tensor>* grads, BatchMetrics* metrics);
  absl::Status RunEvaluate(absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* metrics);
  absl::Status CheckInputs(absl::Span<const Tensor> params, const Batch& batch) const;
  absl::Status ReserveForBatch(int batch);
  // Sizes `grads` like the variables, reusing the caller's tensors when they already fit.
  void PrepareGrads(std::vector<Tensor>* grads, bool zero) const;
  absl::Status UploadBatch(const Batch& batch);
  absl::Status UploadLayerParams(int layer, absl::Span<const Tensor> params);
  absl::Status Forward(absl::Span<const Tensor> params, int batch);
  absl::Status ForwardLayer(int layer, int batch);
  absl::Status LossAndMetricsCopy(int batch, float loss_scale);
  absl::Status Backward(int batch);
  absl::Status BackwardLayer(int layer, int batch, bool need_dx, float** dy, float** spare);
  absl::Status SendLayerGrads(int layer);
  void ReadMetrics(int batch, BatchMetrics* metrics) const;
  absl::Status RowMajorGemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, const float* b, float beta,
                            float* c);
  const float* LayerInput(int layer) const { return layer == 0 ? input_.get() : act_[layer - 1]; }
  float* Param(int index) const { return index < 0 ? nullptr : params_.get() + plan_.param_offsets[index]; }
  float* Grad(int index) const { return index < 0 ? nullptr : grads_.get() + plan_.param_offsets[index]; }

  const ModelPlan plan_;
  const Options options_;
  const std::unique_ptr<DeviceBackend> backend_;           // declared before every DeviceArray: outlives them
  DeviceArray params_, grads_, params_host_, grads_host_;  // flat, batch-independent
  DeviceArray input_, labels_, batch_host_, labels_host_;  // per batch
  DeviceArray activations_, dy_a_, dy_b_, col_, ones_, loss_, correct_, metrics_host_;
  int batch_capacity_ = 0;
  int64_t ones_filled_ = 0;  // leading entries of ones_ known to hold 1.0f
  std::vector<float*> act_;  // act_[i]: output of layer i (flatten aliases its input)
  const float* input_grad_ = nullptr;
  int last_batch_ = 0;
  bool last_was_compute_ = false;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CUDA_DEVICE_GRADIENT_COMPUTER_H_
