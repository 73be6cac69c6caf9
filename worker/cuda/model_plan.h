// ModelPlan: a ModelSpec checked and resolved for the device executor: per layer its kind, shapes,
// fused activation, parameter indices (ModelVariables() order) and offsets in one flat parameter
// buffer, plus the convolution / pooling geometry for a given batch size.
// Thread-safety: an immutable value after PlanModel returns.
#ifndef PSTRAIN_WORKER_CUDA_MODEL_PLAN_H_
#define PSTRAIN_WORKER_CUDA_MODEL_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "common/plan/model_variables.h"
#include "worker/cuda/layer_kernels.h"

namespace pstrain {

enum class DeviceLayerKind { kDense, kConv2D, kMaxPool, kFlatten, kRelu };

struct LayerPlan {
  DeviceLayerKind kind = DeviceLayerKind::kFlatten;
  std::string name;
  std::vector<int64_t> in_shape, out_shape;  // per example
  int64_t in_size = 0, out_size = 0;         // per-example element counts
  bool relu = false;                         // fused ReLU (dense/conv activation "relu") or the relu layer itself
  int kernel_param = -1;                     // index into ModelPlan::variables, -1 when the layer has none
  int bias_param = -1;
  int kernel_size = 0, pad_top = 0, pad_left = 0;  // conv2d
  int pool_size = 0;                               // max_pool2d
  bool has_params() const { return kernel_param >= 0; }
};

struct ModelPlan {
  std::vector<LayerPlan> layers;
  std::vector<VariableSpec> variables;
  std::vector<int64_t> param_offsets;  // start of each variable in the flat parameter buffer
  int64_t param_total = 0;             // floats in the flat parameter buffer
  int64_t input_size = 0;              // per-example input elements
  int64_t outputs = 0;                 // per-example elements of the last layer's output
  bool softmax_xent = true;            // else mse
  int first_trainable = -1;            // lowest layer with parameters, -1 when none
  int64_t max_activation = 0;          // largest per-example activation (input included)

  ConvGeometry Conv(int layer, int batch) const;  // REQUIRES: layers[layer] is conv2d
  PoolGeometry Pool(int layer, int batch) const;  // REQUIRES: layers[layer] is max_pool2d
  // Largest per-batch buffers, in floats, for `batch` examples.
  int64_t MaxColSize(int64_t batch) const;   // im2col matrix over all conv layers (0 when none)
  int64_t MaxConvRows(int64_t batch) const;  // batch * out_h * out_w over conv layers (0 when none)
};

// InvalidArgument naming the layer for what the device executor cannot run: unknown layer types or
// activations, a loss other than sparse_categorical_crossentropy / mse, or a cross-entropy model
// whose last layer does not output a flat vector of logits.
absl::StatusOr<ModelPlan> PlanModel(const ModelSpec& model);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CUDA_MODEL_PLAN_H_
